import { ConcurrentUpdateError } from "../../src/library/errors";
import type {
  StateStore,
  StoredState,
  StoredSummary,
  WriteCondition,
  WriteOptions,
} from "../../src/library/fencing/StateStore";

/** In-memory state store with the blob adapter's ETag semantics (a summary beside each document), for unit tests. */
export class MemoryStateStore implements StateStore {
  private readonly docs = new Map<string, StoredState & { summary: string | undefined; bytes: number }>();
  private version = 0;
  writes = 0;
  /** Runs before each write: a test can let another writer get in first (a stale leader's write, a race). */
  beforeWrite: ((key: string) => Promise<void>) | undefined;

  read(key: string): Promise<StoredState | undefined> {
    const doc = this.docs.get(key);
    return Promise.resolve(
      doc === undefined ? undefined : { value: structuredClone(doc.value), etag: doc.etag, epoch: doc.epoch },
    );
  }

  readSummary(key: string): Promise<StoredSummary | undefined> {
    const doc = this.docs.get(key);
    return Promise.resolve(
      doc === undefined ? undefined : { summary: doc.summary, etag: doc.etag, epoch: doc.epoch, bytes: doc.bytes },
    );
  }

  delete(key: string, condition: { ifMatch: string }): Promise<void> {
    const current = this.docs.get(key);
    if (current === undefined) return Promise.resolve();
    if (current.etag !== condition.ifMatch) return Promise.reject(new ConcurrentUpdateError(`${key} changed`));
    this.docs.delete(key);
    return Promise.resolve();
  }

  async write(
    key: string,
    value: unknown,
    epoch: number,
    condition: WriteCondition,
    options: WriteOptions = {},
  ): Promise<{ etag: string }> {
    await this.beforeWrite?.(key);
    const current = this.docs.get(key);
    const ok = "ifMatch" in condition ? current?.etag === condition.ifMatch : current === undefined;
    if (!ok) throw new ConcurrentUpdateError(`${key} changed`);
    const etag = `"v${++this.version}"`;
    const bytes = Buffer.byteLength(JSON.stringify(value));
    this.docs.set(key, { value: structuredClone(value), etag, epoch, summary: options.summary, bytes });
    this.writes++;
    return { etag };
  }
}
