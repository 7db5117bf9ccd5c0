import type { LeaseState, LeaseStore } from "../lease/LeaseStore.js";
import type { Abortable } from "../util/delay.js";

/** What any instance (or an operator) can read about leadership. */
export interface LeaderInfo {
  /** Instance id of the current leader, or undefined when nobody holds the lease. */
  holder: string | undefined;
  /** The latest term's epoch (0 when nobody has led yet). */
  epoch: number;
  /** When the latest term began (ISO-8601), or undefined before the first. */
  since: string | undefined;
  /** How many terms have begun on this lease. */
  transitions: number;
  /** Storage's view of the lease. */
  leaseState: LeaseState;
  /** An epoch an operator asked to step down, if any. */
  revokedEpoch: number | undefined;
  /** Whether a leader has stepped down for that request (false while it is pending). */
  revocationHonoured: boolean;
}

/** Reads who leads. Two reads, no lease needed: safe for any instance, an HTTP endpoint or a CLI. */
export async function describeLeader(store: LeaseStore, options: Abortable = {}): Promise<LeaderInfo> {
  const [snapshot, revocation] = await Promise.all([store.read(options), store.readRevocation(options)]);
  const { record, state } = snapshot;
  const held = state === "leased" || state === "breaking";
  return {
    holder: held && record.holder !== "" ? record.holder : undefined,
    epoch: record.epoch,
    since: record.sinceMs > 0 ? new Date(record.sinceMs).toISOString() : undefined,
    transitions: record.transitions,
    leaseState: state,
    revokedEpoch: revocation?.epoch,
    revocationHonoured: revocation?.honoured ?? false,
  };
}

/**
 * Asks the current leader to step down (ZooKeeper's revocable lock): it sees the request at its next renewal, aborts
 * its task with reason "revoked", marks the request honoured, releases, and another instance takes over. Returns the
 * revoked epoch, or undefined when nobody holds the lease.
 *
 * The epoch is read first and the request written after; by the time the write lands, the leader read here may have
 * ended (every tick's leader releases), and short terms after it may have come and gone. So a request for epoch e binds
 * the leader of e if it still leads, or else the first term after e to read the request — every term reads it right
 * after writing its record and at every renewal — until a term marks it honoured. A returned epoch therefore always
 * means that someone steps down (at the latest the next term to begin); only the term that honours it is affected.
 */
export async function requestStepDown(store: LeaseStore, options: Abortable = {}): Promise<number | undefined> {
  const { state, record } = await store.read(options);
  if (!(state === "leased" || state === "breaking") || record.epoch === 0) return undefined;
  await store.revoke(record.epoch, options);
  return record.epoch;
}
