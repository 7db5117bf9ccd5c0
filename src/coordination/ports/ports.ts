/**
 * Storage ports of the coordination logic. Adapters on Azure Storage live in `src/azure/`; unit tests use
 * in-memory fakes. Every operation takes an `abortSignal` ({@link Abortable}).
 */

import type { Abortable } from "../../library/util/delay.js";

/** Options of {@link MessageQueue.send}. */
export interface SendOptions extends Abortable {
  /** Keep the messages invisible for this many seconds after sending (a delayed message). @default 0 */
  visibilityDelayS?: number;
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
  /**
   * How long the message had been on the queue when this receive (or peek) saw it, in ms, on storage's own clock
   * (Azure's times are whole seconds). Undefined from a port that cannot tell.
   */
  queuedMs?: number;
}

/** What lets a process change a message it sent or received: its id and latest pop receipt. */
export type MessageReceipt = Pick<ReceivedMessage, "id" | "popReceipt">;

/** A message seen by a peek: visible, not received (no pop receipt: a peek changes nothing). */
export type PeekedMessage = Omit<ReceivedMessage, "popReceipt">;

/** A storage queue, with the encoding the Functions host expects (base64 by default). */
export interface MessageQueue {
  /** Queue name, for logs. */
  readonly name: string;
  /** Sends messages (each a UTF-8 string, encoded by the adapter), visible at once or after `visibilityDelayS`. */
  send(texts: readonly string[], options?: SendOptions): Promise<void>;
  /**
   * Sends one message invisible for `visibilityDelayS` seconds and returns its receipt, so the sender can keep it
   * hidden longer ({@link hide}) or delete it before anyone receives it.
   */
  sendHidden(text: string, visibilityDelayS: number, options?: Abortable): Promise<MessageReceipt>;
  /**
   * Keeps a message this process sent or received invisible for `visibilityTimeoutS` seconds from now, with a new body
   * when `options.text` is given (one request either way). Returns its new receipt, or undefined when it is no longer
   * ours to change: deleted, or received by someone since (stale receipt).
   */
  hide(
    message: MessageReceipt,
    visibilityTimeoutS: number,
    options?: Abortable & { text?: string },
  ): Promise<MessageReceipt | undefined>;
  /** Receives up to `max` (1–32) messages, invisible to others for `visibilityTimeoutS`. */
  receive(max: number, visibilityTimeoutS: number, options?: Abortable): Promise<ReceivedMessage[]>;
  /**
   * Up to `max` (1–32) visible messages, in the order `receive` would return them, without hiding them or counting a
   * delivery.
   */
  peek(max: number, options?: Abortable): Promise<PeekedMessage[]>;
  /**
   * Makes a received message visible again at once (visibility timeout 0), as it was. Answers false when the message
   * is no longer ours to release: deleted, or received again by someone else since (its pop receipt is stale).
   */
  release(message: Pick<ReceivedMessage, "id" | "popReceipt">, options?: Abortable): Promise<boolean>;
  /**
   * Deletes a received message. Answers false, changing nothing, when it is already gone or no longer ours (Azure's
   * `404` or `400 PopReceiptMismatch`: someone received it again and will see it as a duplicate).
   */
  delete(message: Pick<ReceivedMessage, "id" | "popReceipt">, options?: Abortable): Promise<boolean>;
  /** How many messages the queue holds, visible or not (storage's approximate count); 0 for a missing queue. */
  approximateCount(options?: Abortable): Promise<number>;
}

/**
 * The app's own blobs, in the system container (SYSTEM_CONTAINER): job specs, item chunks, inbox markers and large
 * partial results. Nothing else lives there, and the app writes nowhere else but the state and lease containers.
 */
export interface BlobFiles extends InputFiles {
  /** Writes a blob (overwrites). */
  writeText(name: string, text: string, options?: Abortable): Promise<void>;
  /**
   * Creates a blob only if none exists by that name (one conditional request, `If-None-Match: *`): true when this call
   * created it, false when one exists (whoever wrote it; nothing is changed). What lets concurrent writers agree on one
   * of them (an idempotency claim, a keyed job's spec).
   */
  createText(name: string, text: string, options?: Abortable): Promise<boolean>;
  /** Deletes a blob with its snapshots; a missing one is a no-op. */
  delete(name: string, options?: Abortable): Promise<void>;
}

/** A blob opened for reading: its size is known before a byte of it is read. */
export interface OpenedBlob {
  sizeBytes: number;
  /** The version read (storage's ETag): another read that gets the same one reads the same content. */
  etag?: string;
  /** The content, in pieces as they arrive. Iterate it at most once. */
  content: AsyncIterable<Uint8Array>;
  /** Stops reading (closes the connection); call it when the content will not be read to the end. */
  close(): void;
}

/**
 * The user's input container (INPUT_CONTAINER), read only: items and manifests name blobs there. The app never
 * writes, creates or deletes anything in it; in Azure its identity may only read it. Every operation that takes a
 * blob name (here and in {@link BlobFiles}) refuses, with a `ConfigurationError`, a name that could address a blob
 * outside the container: one with a "." or ".." segment, or an empty one.
 */
export interface InputFiles {
  /** Reads a blob as text; undefined when it (or the container) does not exist. */
  readText(name: string, options?: Abortable): Promise<string | undefined>;
  /** Opens a blob to read it as a stream; undefined when it (or the container) does not exist. */
  open(name: string, options?: Abortable): Promise<OpenedBlob | undefined>;
  /** Lists blob names under a prefix, up to `max`. */
  list(prefix: string, max: number, options?: Abortable): Promise<string[]>;
}
