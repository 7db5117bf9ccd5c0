/**
 * Every error class the library throws, in one module (CONTRIBUTING.md, "Errors").
 *
 * Each says whether the caller or the system is at fault; storage failures keep the SDK error as `cause`.
 */

/** The caller passed a bad option or setting. Fix the value named in the message. */
export class ConfigurationError extends Error {
  /** Always `"InvalidConfiguration"`. */
  readonly code = "InvalidConfiguration";
  constructor(message: string) {
    super(message);
    this.name = "ConfigurationError";
  }
}

/** Why a leader stopped leading. */
export type LeadershipLostReason =
  /** Storage said the lease is no longer ours (broken or taken). */
  | "lost"
  /** No renewal succeeded before the local renew deadline (storage slow or unreachable, or the process froze). */
  | "deadline"
  /** An operator asked this leader to step down. */
  | "revoked"
  /** The task reported no progress within the watchdog's timeout. */
  | "stalled"
  /** The caller's own abort signal fired (shutdown). */
  | "shutdown";

/**
 * The reason a leader's `AbortSignal` fires, and the error a fenced write throws once leadership is in doubt.
 * System-side: nothing the caller did wrong; the work is safe to retry under the next leader.
 */
export class LeadershipLostError extends Error {
  /** Always `"LeadershipLost"`. */
  readonly code = "LeadershipLost";
  constructor(
    /** Why leadership ended. */
    readonly reason: LeadershipLostReason,
    /**
     * The epoch of the term that ended; 0 when a lease store throws it for a request that names no epoch (a renewal
     * refused: the store knows only the lease id). The term then ends with its own error, which names its epoch and
     * keeps the store's as `cause`.
     */
    readonly epoch: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "LeadershipLostError";
  }
}

/**
 * A fenced write was refused because a newer leadership term has written the same state (its stored epoch is higher),
 * or because the writer's own term is over. Nothing was changed. System-side; a stale leader should stop.
 */
export class StaleEpochError extends Error {
  /** Always `"StaleEpoch"`. */
  readonly code = "StaleEpoch";
  constructor(
    /** The writer's epoch. */
    readonly writerEpoch: number,
    /** The epoch stored with the state, when known. */
    readonly storedEpoch: number | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "StaleEpochError";
  }
}

/**
 * A conditional write lost a race: the state changed since it was read (ETag mismatch), or it already existed
 * when the write expected to create it. Nothing was changed; read again and retry.
 */
export class ConcurrentUpdateError extends Error {
  /** Always `"ConcurrentUpdate"`. */
  readonly code = "ConcurrentUpdate";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ConcurrentUpdateError";
  }
}

/**
 * Storage answered with a status the library does not expect, or could not be reached. System-side.
 * `code` is the storage error code when there was one.
 */
export class StorageError extends Error {
  constructor(
    /** The storage error code (e.g. `"ContainerBeingDeleted"`), or `"StorageUnavailable"` when no answer came. */
    readonly code: string,
    /** The HTTP status, when storage answered. */
    readonly statusCode: number | undefined,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "StorageError";
  }
}

/** Thrown when an operation is aborted through its `abortSignal`; passes through every layer unchanged. */
export class AbortError extends Error {
  constructor(message = "The operation was aborted.", options?: { cause?: unknown }) {
    super(message, options);
    this.name = "AbortError";
  }
}
