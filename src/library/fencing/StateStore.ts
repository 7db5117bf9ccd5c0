/**
 * The state port: small JSON documents stored with an ETag and the epoch of the term that wrote them. One adapter
 * talks to Azure Blob Storage ({@link BlobStateStore}); unit tests use an in-memory fake with the same semantics.
 */

import type { Abortable } from "../util/delay";

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

/** The state port. */
export interface StateStore {
  /** Reads a document; undefined when it does not exist. */
  read(key: string, options?: Abortable): Promise<StoredState | undefined>;
  /**
   * Writes a document with its writer's epoch, only if `condition` holds.
   * @throws ConcurrentUpdateError when it does not (nothing written).
   */
  write(
    key: string,
    value: unknown,
    epoch: number,
    condition: WriteCondition,
    options?: Abortable,
  ): Promise<{ etag: string }>;
}
