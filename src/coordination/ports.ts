/**
 * Storage ports of the coordination logic. Adapters on Azure Storage live in `src/storage/`; unit tests use
 * in-memory fakes. Every operation takes an `abortSignal`.
 */

/** Options every port operation takes. */
export interface PortOptions {
  abortSignal?: AbortSignal;
}

/** A received queue message. `text` is the decoded body. */
export interface ReceivedMessage {
  id: string;
  popReceipt: string;
  dequeueCount: number;
  /** The body decoded from the queue's encoding; undefined when it could not be decoded. */
  text: string | undefined;
  /** The body exactly as stored. */
  rawText: string;
}

/** A storage queue, with the encoding the Functions host expects (base64 by default). */
export interface MessageQueue {
  /** Queue name, for logs. */
  readonly name: string;
  /** Sends messages (each a UTF-8 string, encoded by the adapter). */
  send(texts: readonly string[], options?: PortOptions): Promise<void>;
  /** Receives up to `max` (1–32) messages, invisible to others for `visibilityTimeoutS`. */
  receive(max: number, visibilityTimeoutS: number, options?: PortOptions): Promise<ReceivedMessage[]>;
  /** Deletes a received message. Deleting one already gone is a no-op. */
  delete(message: Pick<ReceivedMessage, "id" | "popReceipt">, options?: PortOptions): Promise<void>;
  /** How many messages the queue holds, visible or not (storage's approximate count); 0 for a missing queue. */
  approximateCount(options?: PortOptions): Promise<number>;
}

/** Blobs the submitter writes and the leader and workers read: job specs, item chunks, inbox markers, inputs. */
export interface BlobFiles {
  /** Reads a blob as text; undefined when it does not exist. */
  readText(name: string, options?: PortOptions): Promise<string | undefined>;
  /** Writes a blob (overwrites). */
  writeText(name: string, text: string, options?: PortOptions): Promise<void>;
  /** Lists blob names under a prefix, up to `max`. */
  list(prefix: string, max: number, options?: PortOptions): Promise<string[]>;
  /** Deletes a blob; a missing one is a no-op. */
  delete(name: string, options?: PortOptions): Promise<void>;
}
