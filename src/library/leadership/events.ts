import type { LeadershipLostReason } from "../errors.js";

/** How the term before a term ended: see `LeadershipTerm.previousEnd`. */
export type PreviousEnd = "released" | "lapsed";

/** Fields every leadership event carries. */
export interface LeadershipEventBase {
  /** The instance that saw or did it. */
  instanceId: string;
  /** Wall-clock ms. */
  atMs: number;
}

/** This instance began a term. */
export interface LeaseAcquiredEvent extends LeadershipEventBase {
  /** The event's kind. */
  type: "lease-acquired";
  /** The new term's epoch. */
  epoch: number;
  /** Holder of the previous term ("" if none). */
  previousHolder: string;
  /** Terms begun on this lease so far, this one included. */
  transitions: number;
  /**
   * Set when this term follows a takeover: the previous holder had fallen silent and this instance (or another) broke
   * its lease before it expired. The instance id of the one that broke it.
   */
  brokenBy?: string;
  /**
   * How the previous term ended: "released" (its holder gave the lease back) or "lapsed" (the lease expired or was
   * broken: that term may have stopped mid-task). Absent from events of versions before it.
   */
  previousEnd?: PreviousEnd;
}

/** This instance renewed its lease. */
export interface LeaseRenewedEvent extends LeadershipEventBase {
  /** The event's kind. */
  type: "lease-renewed";
  /** The term's epoch. */
  epoch: number;
  /** How long the renewal took. */
  latencyMs: number;
}

/** This instance stopped leading before its task ended (lease lost, deadline, revoked, stalled or shutdown). */
export interface LeaseLostEvent extends LeadershipEventBase {
  /** The event's kind. */
  type: "lease-lost";
  /** The term's epoch. */
  epoch: number;
  /** Why the term ended (`LeadershipLostError.reason`). */
  reason: LeadershipLostReason;
  /** What happened, for a person. */
  detail: string;
  /**
   * With takeover: the wall-clock ms of the term's takeover deadline as it stood when the term ended — the start of its
   * last successful heartbeat plus `takeoverDeadlineMs`, counted on its monotonic clock; past or future. Evidence of
   * when the term stopped acting for a reader of the event log (the chaos suite bounds a frozen leader's step by it):
   * heartbeats themselves log nothing. Absent without takeover, or before the term's record was written.
   */
  takeoverDeadlineAtMs?: number;
}

/** This instance released its lease at the end of a term. */
export interface LeaseReleasedEvent extends LeadershipEventBase {
  /** The event's kind. */
  type: "lease-released";
  /** The term's epoch. */
  epoch: number;
  /** How long the term lasted. */
  heldMs: number;
}

/** A contender saw another instance leading (emitted when the observed holder or epoch changes). */
export interface LeaderObservedEvent extends LeadershipEventBase {
  /** The event's kind. */
  type: "leader-observed";
  /** The leader's instance id. */
  leader: string;
  /** The leader's epoch. */
  epoch: number;
}

/**
 * This instance broke the lease of a holder that had fallen silent (takeover): it had seen the holder's record
 * unchanged for longer than the holder's takeover deadline, with its margins, so the holder had stopped by its own
 * rule.
 */
export interface LeaseBrokenEvent extends LeadershipEventBase {
  /** The event's kind. */
  type: "lease-broken";
  /** The silent holder's instance id. */
  holder: string;
  /** The silent holder's epoch (not this instance's: it has none yet). */
  holderEpoch: number;
  /** How long this instance saw the record unchanged before it broke the lease, in ms of its own clock. */
  silentMs: number;
}

/** Every leadership event. */
export type LeadershipEvent =
  LeaseAcquiredEvent | LeaseRenewedEvent | LeaseLostEvent | LeaseReleasedEvent | LeaderObservedEvent | LeaseBrokenEvent;
