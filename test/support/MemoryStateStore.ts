import { ConcurrentUpdateError } from "../../src/errors";
import type { StateStore, StoredState, WriteCondition } from "../../src/fencing/StateStore";

/** In-memory state store with the blob adapter's ETag semantics, for unit tests. */
export class MemoryStateStore implements StateStore {
  private readonly docs = new Map<string, StoredState>();
  private version = 0;
  writes = 0;

  read(key: string): Promise<StoredState | undefined> {
    const doc = this.docs.get(key);
    return Promise.resolve(doc === undefined ? undefined : { ...doc, value: structuredClone(doc.value) });
  }

  write(key: string, value: unknown, epoch: number, condition: WriteCondition): Promise<{ etag: string }> {
    const current = this.docs.get(key);
    const ok = "ifMatch" in condition ? current?.etag === condition.ifMatch : current === undefined;
    if (!ok) return Promise.reject(new ConcurrentUpdateError(`${key} changed`));
    const etag = `"v${++this.version}"`;
    this.docs.set(key, { value: structuredClone(value), etag, epoch });
    this.writes++;
    return Promise.resolve({ etag });
  }
}
