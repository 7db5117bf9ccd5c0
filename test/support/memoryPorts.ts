import { createHash } from "node:crypto";
import { ContainerClient } from "@azure/storage-blob";
import { blobIn } from "../../src/azure/azureNames";
import type {
  BlobFiles,
  MessageQueue,
  MessageReceipt,
  OpenedBlob,
  PeekedMessage,
  ReceivedMessage,
  SendOptions,
} from "../../src/coordination/ports/ports";
import { LeadershipLostError, StorageError } from "../../src/library/errors";
import type { LeadershipTerm } from "../../src/library/leadership/Term";

/** Most bytes of a queue message as sent (base64), as Azure allows. */
const MAX_MESSAGE_BYTES = 64 * 1024;

/** A message as the in-memory queue holds it. */
interface StoredMessage {
  id: string;
  text: string;
  visibleAtMs: number;
  /** Tie-break for equal visibility times: the order of the last visibility change, as storage orders by it. */
  order: number;
  dequeueCount: number;
  popReceipt: string;
  /** When it was sent, on the queue's clock. */
  insertedAtMs: number;
}

/**
 * In-memory queue with the semantics of Azure Queue Storage on a settable clock, for unit tests: receive and peek
 * return visible messages ordered by the time they became visible (a released message goes behind the others),
 * receive hides them and gives a new pop receipt, release makes one visible at once, and delete or release with a
 * stale pop receipt (or of a message already gone) changes nothing and answers false. Bodies are stored as given; a
 * body whose base64 form (as the adapter sends it) is over 64 KiB is refused with 413, as Azure refuses it.
 */
export class MemoryQueue implements MessageQueue {
  private messages: StoredMessage[] = [];
  private nextId = 0;
  private nextOrder = 0;
  nowMs = 0;
  /** When set, `delete` throws (a leader that crashes before acknowledging). */
  failDeletes = false;
  /** How many times each operation was called. */
  readonly calls = { send: 0, receive: 0, peek: 0, release: 0, delete: 0, hide: 0 };

  constructor(readonly name = "queue") {}

  send(texts: readonly string[], options: SendOptions = {}): Promise<void> {
    this.calls.send++;
    const tooLarge = texts.find((text) => Math.ceil(Buffer.byteLength(text) / 3) * 4 > MAX_MESSAGE_BYTES);
    if (tooLarge !== undefined)
      return Promise.reject(
        new StorageError(
          "RequestBodyTooLarge",
          413,
          `Sending to queue ${this.name} failed: a message of ${Buffer.byteLength(tooLarge)} bytes is over 64 KiB in base64 (simulated)`,
        ),
      );
    const visibleAtMs = this.nowMs + (options.visibilityDelayS ?? 0) * 1000;
    for (const text of texts)
      this.messages.push({
        id: `m${++this.nextId}`,
        text,
        visibleAtMs,
        order: ++this.nextOrder,
        dequeueCount: 0,
        popReceipt: "",
        insertedAtMs: this.nowMs,
      });
    return Promise.resolve();
  }

  async sendHidden(text: string, visibilityDelayS: number): Promise<MessageReceipt> {
    await this.send([text], { visibilityDelayS });
    const stored = this.messages.at(-1);
    if (stored === undefined) throw new Error("sendHidden: nothing was stored");
    stored.popReceipt = `p${++this.nextId}`;
    return { id: stored.id, popReceipt: stored.popReceipt };
  }

  hide(
    message: MessageReceipt,
    visibilityTimeoutS: number,
    options: { text?: string } = {},
  ): Promise<MessageReceipt | undefined> {
    this.calls.hide++;
    const stored = this.find(message);
    if (stored === undefined) return Promise.resolve(undefined);
    if (options.text !== undefined) stored.text = options.text;
    stored.visibleAtMs = this.nowMs + visibilityTimeoutS * 1000;
    stored.popReceipt = `p${++this.nextId}`;
    return Promise.resolve({ id: stored.id, popReceipt: stored.popReceipt });
  }

  receive(max: number, visibilityTimeoutS: number): Promise<ReceivedMessage[]> {
    this.calls.receive++;
    return Promise.resolve(
      this.visible(max).map((message) => {
        message.visibleAtMs = this.nowMs + visibilityTimeoutS * 1000;
        message.order = ++this.nextOrder;
        message.dequeueCount++;
        message.popReceipt = `p${++this.nextId}`;
        return {
          id: message.id,
          popReceipt: message.popReceipt,
          dequeueCount: message.dequeueCount,
          text: message.text,
          rawText: message.text,
          queuedMs: this.nowMs - message.insertedAtMs,
        };
      }),
    );
  }

  peek(max: number): Promise<PeekedMessage[]> {
    this.calls.peek++;
    return Promise.resolve(
      this.visible(Math.min(32, max)).map((message) => ({
        id: message.id,
        dequeueCount: message.dequeueCount,
        text: message.text,
        rawText: message.text,
        queuedMs: this.nowMs - message.insertedAtMs,
      })),
    );
  }

  release(message: Pick<ReceivedMessage, "id" | "popReceipt">): Promise<boolean> {
    this.calls.release++;
    const stored = this.find(message);
    if (stored === undefined) return Promise.resolve(false);
    stored.visibleAtMs = this.nowMs;
    stored.order = ++this.nextOrder;
    stored.popReceipt = `p${++this.nextId}`;
    return Promise.resolve(true);
  }

  delete(message: Pick<ReceivedMessage, "id" | "popReceipt">): Promise<boolean> {
    this.calls.delete++;
    if (this.failDeletes) return Promise.reject(new Error("crashed before delete (simulated)"));
    const stored = this.find(message);
    if (stored === undefined) return Promise.resolve(false);
    this.messages = this.messages.filter((m) => m !== stored);
    return Promise.resolve(true);
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

  private visible(max: number): StoredMessage[] {
    return this.messages
      .filter((message) => message.visibleAtMs <= this.nowMs)
      .sort((a, b) => a.visibleAtMs - b.visibleAtMs || a.order - b.order)
      .slice(0, max);
  }

  /** The message with this id and pop receipt (the one a holder of that receipt may change). */
  private find(message: Pick<ReceivedMessage, "id" | "popReceipt">): StoredMessage | undefined {
    return this.messages.find((m) => m.id === message.id && m.popReceipt === message.popReceipt);
  }
}

/**
 * In-memory blob files (also usable as the read-only input files). `open` hands out the content in pieces of
 * `pieceBytes`. Like the Azure adapter, every operation refuses a name that could address a blob outside the
 * container (a "." or ".." segment, or an empty name) with the adapter's `ConfigurationError`.
 */
export class MemoryFiles implements BlobFiles {
  readonly blobs = new Map<string, string | Buffer>();
  pieceBytes = 64 * 1024;
  /**
   * Blobs under a legal hold (or a time-based immutability policy): deleting one answers what Azure answers, 409
   * `BlobImmutableDueToLegalHold`, as the adapter maps it. Azurite models neither holds nor policies, so this is where
   * they are tested.
   */
  readonly legalHolds = new Set<string>();
  /** Delete requests made, per blob name. */
  readonly deletes = new Map<string, number>();

  readText(name: string): Promise<string | undefined> {
    const refused = refusedName(name);
    if (refused !== undefined) return Promise.reject(refused);
    const blob = this.blobs.get(name);
    return Promise.resolve(typeof blob === "string" || blob === undefined ? blob : blob.toString("utf8"));
  }
  open(name: string): Promise<OpenedBlob | undefined> {
    const refused = refusedName(name);
    if (refused !== undefined) return Promise.reject(refused);
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
    const etag = `"${createHash("sha256").update(bytes).digest("hex").slice(0, 16)}"`;
    return Promise.resolve({ sizeBytes: bytes.length, etag, content: content(), close: () => (closed = true) });
  }
  writeText(name: string, text: string): Promise<void> {
    const refused = refusedName(name);
    if (refused !== undefined) return Promise.reject(refused);
    this.blobs.set(name, text);
    return Promise.resolve();
  }
  /** Creates the blob unless it exists (as `If-None-Match: *`): true when created. */
  createText(name: string, text: string): Promise<boolean> {
    const refused = refusedName(name);
    if (refused !== undefined) return Promise.reject(refused);
    if (this.blobs.has(name)) return Promise.resolve(false);
    this.blobs.set(name, text);
    return Promise.resolve(true);
  }
  list(prefix: string, max: number): Promise<string[]> {
    return Promise.resolve(
      [...this.blobs.keys()]
        .filter((name) => name.startsWith(prefix))
        .sort()
        .slice(0, max),
    );
  }
  delete(name: string): Promise<void> {
    const refused = refusedName(name);
    if (refused !== undefined) return Promise.reject(refused);
    this.deletes.set(name, (this.deletes.get(name) ?? 0) + 1);
    if (this.legalHolds.has(name) && this.blobs.has(name))
      return Promise.reject(
        new StorageError(
          "BlobImmutableDueToLegalHold",
          409,
          `Deleting blob ${name} failed: storage answered 409 BlobImmutableDueToLegalHold. This is unexpected; see the cause for details.`,
        ),
      );
    this.blobs.delete(name);
    return Promise.resolve();
  }
}

/** A container client that is never called: only its URL is used, to check names as the Azure adapter does. */
const MEMORY_CONTAINER = new ContainerClient("http://127.0.0.1:10000/devstoreaccount1/memory");

/** The error the Azure adapter throws for a name it refuses ({@link blobIn}), or undefined for a name it takes. */
function refusedName(name: string): Error | undefined {
  try {
    blobIn(MEMORY_CONTAINER, name);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
}

/** A leadership term for unit tests: live until `end()` is called. */
export function fakeTerm(
  epoch: number,
  instanceId = `leader-${epoch}`,
  previousEnd: LeadershipTerm["previousEnd"] = "released",
): LeadershipTerm & { end(): void } {
  const controller = new AbortController();
  return {
    instanceId,
    epoch,
    signal: controller.signal,
    startedAtMs: 0,
    previousEnd,
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
