import type { BlobFiles, MessageQueue, OpenedBlob, ReceivedMessage } from "../../src/coordination/ports";
import { LeadershipLostError } from "../../src/errors";
import type { LeadershipTerm } from "../../src/leadership/Term";

/** In-memory queue with visibility timeouts on a settable clock, for unit tests. Bodies are stored as given. */
export class MemoryQueue implements MessageQueue {
  private messages: { id: string; text: string; visibleAtMs: number; dequeueCount: number; popReceipt: string }[] = [];
  private nextId = 0;
  nowMs = 0;
  /** When set, `delete` throws (a leader that crashes before acknowledging). */
  failDeletes = false;

  constructor(readonly name = "queue") {}

  send(texts: readonly string[]): Promise<void> {
    for (const text of texts) this.messages.push({ id: `m${++this.nextId}`, text, visibleAtMs: 0, dequeueCount: 0, popReceipt: "" });
    return Promise.resolve();
  }

  receive(max: number, visibilityTimeoutS: number): Promise<ReceivedMessage[]> {
    const out: ReceivedMessage[] = [];
    for (const message of this.messages) {
      if (out.length >= max) break;
      if (message.visibleAtMs > this.nowMs) continue;
      message.visibleAtMs = this.nowMs + visibilityTimeoutS * 1000;
      message.dequeueCount++;
      message.popReceipt = `p${++this.nextId}`;
      out.push({ id: message.id, popReceipt: message.popReceipt, dequeueCount: message.dequeueCount, text: message.text, rawText: message.text });
    }
    return Promise.resolve(out);
  }

  delete(message: Pick<ReceivedMessage, "id" | "popReceipt">): Promise<void> {
    if (this.failDeletes) return Promise.reject(new Error("crashed before delete (simulated)"));
    this.messages = this.messages.filter((m) => !(m.id === message.id && m.popReceipt === message.popReceipt));
    return Promise.resolve();
  }

  approximateCount(): Promise<number> {
    return Promise.resolve(this.messages.length);
  }

  /** Every body, visible or not. */
  bodies(): string[] {
    return this.messages.map((m) => m.text);
  }

  get length(): number {
    return this.messages.length;
  }
}

/** In-memory blob files (also usable as the read-only input files). `open` hands out the content in pieces of `pieceBytes`. */
export class MemoryFiles implements BlobFiles {
  readonly blobs = new Map<string, string | Buffer>();
  pieceBytes = 64 * 1024;

  readText(name: string): Promise<string | undefined> {
    const blob = this.blobs.get(name);
    return Promise.resolve(typeof blob === "string" || blob === undefined ? blob : blob.toString("utf8"));
  }
  open(name: string): Promise<OpenedBlob | undefined> {
    const blob = this.blobs.get(name);
    if (blob === undefined) return Promise.resolve(undefined);
    const bytes = typeof blob === "string" ? Buffer.from(blob, "utf8") : blob;
    const { pieceBytes } = this;
    let closed = false;
    async function* content(): AsyncGenerator<Uint8Array> {
      for (let start = 0; start < bytes.length && !closed; start += pieceBytes) {
        await Promise.resolve();
        yield bytes.subarray(start, start + pieceBytes);
      }
    }
    return Promise.resolve({ sizeBytes: bytes.length, content: content(), close: () => (closed = true) });
  }
  writeText(name: string, text: string): Promise<void> {
    this.blobs.set(name, text);
    return Promise.resolve();
  }
  list(prefix: string, max: number): Promise<string[]> {
    return Promise.resolve([...this.blobs.keys()].filter((name) => name.startsWith(prefix)).sort().slice(0, max));
  }
  delete(name: string): Promise<void> {
    this.blobs.delete(name);
    return Promise.resolve();
  }
}

/** A leadership term for unit tests: live until `end()` is called. */
export function fakeTerm(epoch: number, instanceId = `leader-${epoch}`): LeadershipTerm & { end(): void } {
  const controller = new AbortController();
  return {
    instanceId,
    epoch,
    signal: controller.signal,
    startedAtMs: 0,
    isLeader: () => !controller.signal.aborted,
    assertLeader: () => {
      controller.signal.throwIfAborted();
    },
    reportProgress: () => undefined,
    end: () => {
      controller.abort(new LeadershipLostError("lost", epoch, "term ended (test)"));
    },
  };
}
