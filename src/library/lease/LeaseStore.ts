/**
 * The lease port: the few operations leadership needs from a lease-able blob. One adapter talks to Azure Blob Storage
 * ({@link BlobLeaseStore}); unit tests use an in-memory fake with the same semantics.
 */

import type { Abortable } from "../util/delay.js";

/** The leadership record kept in the lease blob's metadata. Only the lease holder can write it. */
export interface LeaderRecord {
  /** Instance id of the holder of the latest term. */
  holder: string;
  /** The latest term's epoch: strictly increases with every term. 0 means no term yet. */
  epoch: number;
  /** Wall-clock ms when the latest term began. */
  sinceMs: number;
  /** How many terms have begun on this blob (leadership transitions). */
  transitions: number;
  /**
   * The holder's takeover deadline, in ms: it heartbeats (rewrites this record) and stops acting when no heartbeat has
   * succeeded for this long, so a contender that has seen the record unchanged for longer may break its lease (see
   * docs/explanation/failover.md). Absent or 0: the holder does not heartbeat, and nobody may take over before its
   * lease expires.
   */
  takeoverDeadlineMs?: number;
  /**
   * Set by a contender that broke this term's lease after the holder fell silent (a takeover): its instance id. The
   * next term's record drops it; its `lease-acquired` event reports it.
   */
  brokenBy?: string;
}

/** Lease state as storage reports it. */
export type LeaseState = "available" | "leased" | "expired" | "breaking" | "broken";

/** What any instance can read about the lease. */
export interface LeaseSnapshot {
  /** Storage's view of the lease. `leased` or `breaking` means someone may hold it. */
  state: LeaseState;
  /** The last leadership record written; `epoch: 0` when no term has begun. */
  record: LeaderRecord;
  /**
   * An opaque token that changes with every write of the record (a new term's, a heartbeat, a takeover's mark) and
   * never repeats: the lease blob's ETag. Renewing a lease does not change it. Undefined when the store cannot say
   * (then nobody takes over: a contender cannot see heartbeats).
   */
  version?: string;
}

/**
 * How {@link LeaseStore.breakIfUnchanged} ended: losing the race (the version moved on) is a value, and so is finding
 * the lease given back ("not-held").
 */
export type BreakOutcome = "broken" | "changed" | "not-held";

/**
 * An operator's request that the leader of `epoch` step down. Until a term marks it honoured it binds the first term
 * with an epoch of at least `epoch` that reads it (see `bindsTerm`), so a request that was accepted always makes
 * someone step down, however late its write lands.
 */
export interface Revocation {
  /** The epoch the request read: the leader of it, or the first term after it to read the request, steps down. */
  epoch: number;
  /** True once a term has stepped down for it and marked it honoured; later terms are not affected. */
  honoured: boolean;
  /**
   * Identifies this request among requests for the same epoch, so a term marks honoured only the request it read (a
   * newer one that lands meanwhile stops the next term). Absent from requests written by earlier versions.
   */
  requestId?: string;
}

/** Options of {@link LeaseStore.honourRevocation}. */
export interface HonourOptions extends Abortable {
  /**
   * The id of the request the term read ({@link Revocation.requestId}): the mark is a no-op when the stored request
   * has another id. @default the mark applies to whatever request names `epoch`
   */
  requestId?: string;
}

/** Result of an acquire attempt: losing the race is a value, not an exception. */
export type AcquireResult = { acquired: true } | { acquired: false };

/** The lease port. */
export interface LeaseStore {
  /** Human-readable name of the lease (e.g. `leases/MyLeaderCoordinatorTask`), for logs. */
  readonly name: string;
  /** Creates the container and blob if missing. Idempotent. */
  ensureExists(options?: Abortable): Promise<void>;
  /**
   * Tries to take the lease with the proposed id. Taking it again with the id already held succeeds (idempotent
   * retry after an unknown outcome). Someone else holding it, or the lease breaking → `{ acquired: false }`.
   */
  acquire(leaseId: string, durationS: number, options?: Abortable): Promise<AcquireResult>;
  /**
   * Renews the lease. @throws LeadershipLostError with reason `"lost"` when the lease is no longer ours (taken, broken,
   * or its blob deleted).
   */
  renew(leaseId: string, options?: Abortable): Promise<void>;
  /** Releases the lease so the next contender need not wait for expiry. Releasing a lease no longer ours is a no-op. */
  release(leaseId: string, options?: Abortable): Promise<void>;
  /** Breaks whoever holds the lease; with `breakPeriodS = 0` it ends at once. An operator's or a test's tool. */
  breakLease(breakPeriodS: number, options?: Abortable): Promise<void>;
  /**
   * Takeover: breaks the lease at once (break period 0), only if the record's version is still `version` (a
   * conditional request: no heartbeat or record write has landed since), then writes `record` — the record read with
   * that version, marked with `brokenBy` — conditioned on the same version, so the version moves on and no other
   * contender that counted silence on `version` breaks the next term before it has written its own record. The mark
   * is best effort: its failure changes nothing (the break has landed).
   *
   * @returns "broken" when the break landed; "changed" when the version had moved on — nothing was broken;
   *   "not-held" when nobody held the lease (Azure's 409: the holder released it since the read, which leaves the
   *   version as it was) — nothing was broken, no mark written, and the lease is free to acquire.
   */
  breakIfUnchanged(version: string, record: LeaderRecord, options?: Abortable): Promise<BreakOutcome>;
  /** Reads lease state, the leader record and its version (one request). */
  read(options?: Abortable): Promise<LeaseSnapshot>;
  /**
   * Writes the leader record; only the holder of `leaseId` can (storage refuses others). A term also calls it with its
   * own record unchanged as its heartbeat: every write moves the version on. @throws LeadershipLostError("lost")
   */
  writeRecord(leaseId: string, record: LeaderRecord, options?: Abortable): Promise<void>;
  /** Reads the latest step-down request, if any. One cheap request; the leader calls it at each renewal. */
  readRevocation(options?: Abortable): Promise<Revocation | undefined>;
  /**
   * Asks the leader of `epoch` (or, if it has already ended, the first term after it to read the request) to step
   * down: stores a new, not yet honoured request with a fresh {@link Revocation.requestId}, replacing any earlier one.
   */
  revoke(epoch: number, options?: Abortable): Promise<void>;
  /**
   * Marks the request for `epoch` honoured, before the leader that honours it releases the lease. A no-op when the
   * latest request names another epoch, or another request id than `options.requestId` (a newer request must not be
   * lost: it stops the next term).
   */
  honourRevocation(epoch: number, options?: HonourOptions): Promise<void>;
}

/** The record of a blob on which no term has begun. */
export const EMPTY_RECORD: LeaderRecord = Object.freeze({ holder: "", epoch: 0, sinceMs: 0, transitions: 0 });
