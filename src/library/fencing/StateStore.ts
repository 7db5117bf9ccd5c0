/**
 * The state port: small JSON documents stored with an ETag and the epoch of the term that wrote them. One adapter
 * talks to Azure Blob Storage ({@link BlobStateStore}); unit tests use an in-memory fake with the same semantics.
 */

import type { Abortable } from "../util/delay.js";

/** A stored document, as read. */
export interface StoredState {
  /** The parsed JSON. */
  value: unknown;
  /** Storage's version tag: a write conditioned on it fails if anyone wrote in between. */
  etag: string;
  /** The epoch of the term that wrote it. */
  epoch: number;
}

/** What a write must find to succeed: the version it read, or nothing at all (create). */
export type WriteCondition = { ifMatch: string } | { ifNoneMatch: "*" };

/** Most bytes (UTF-8) of a document's summary: it travels in the blob's metadata, which Azure caps at 8 KiB. */
export const MAX_SUMMARY_BYTES = 4096;

/** Options of {@link StateStore.write}. */
export interface WriteOptions extends Abortable {
  /**
   * A small text stored with the document in the same write — so it never disagrees with it, and is fenced with it —
   * that a reader can read without the document ({@link StateStore.readSummary}): at most {@link MAX_SUMMARY_BYTES}
   * bytes of UTF-8. @default none
   */
  summary?: string;
}

/** A document's summary, read without the document. */
export interface StoredSummary {
  /** The summary written with the current version; undefined when it was written without one (an earlier version). */
  summary: string | undefined;
  /** The document's version tag, as {@link StoredState.etag}. */
  etag: string;
  /** The epoch of the term that wrote it. */
  epoch: number;
  /** The size of the document itself, in bytes. */
  bytes: number;
}

/** The state port. */
export interface StateStore {
  /** Reads a document; undefined when it does not exist. */
  read(key: string, options?: Abortable): Promise<StoredState | undefined>;
  /**
   * Reads the summary written with a document, and the document's size, without the document (one small request);
   * undefined when the document does not exist.
   */
  readSummary(key: string, options?: Abortable): Promise<StoredSummary | undefined>;
  /**
   * Deletes a document, only if it is still the version read (`condition.ifMatch`); a document already gone is a
   * no-op. @throws ConcurrentUpdateError when another version is stored (nothing deleted).
   */
  delete(key: string, condition: { ifMatch: string }, options?: Abortable): Promise<void>;
  /**
   * Writes a document with its writer's epoch (and `options.summary`, when given), only if `condition` holds.
   * @throws ConcurrentUpdateError when it does not (nothing written); ConfigurationError for a summary of more than
   *   {@link MAX_SUMMARY_BYTES}.
   */
  write(
    key: string,
    value: unknown,
    epoch: number,
    condition: WriteCondition,
    options?: WriteOptions,
  ): Promise<{ etag: string }>;
}
