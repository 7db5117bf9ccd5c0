import type { LeadershipLostReason } from "../errors.js";

/** How the term before a term ended: see `LeadershipTerm.previousEnd`. */
export type PreviousEnd = "released" | "lapsed";

/** Fields every leadership event carries. */
interface EventBase {
  /** The instance that saw or did it. */
  instanceId: string;
  /** Wall-clock ms. */
  atMs: number;
}

/** This instance began a term. */
export interface LeaseAcquiredEvent extends EventBase {
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
export interface LeaseRenewedEvent extends EventBase {
  type: "lease-renewed";
  epoch: number;
  /** How long the renewal took. */
  latencyMs: number;
}

/** This instance stopped leading before its task ended (lease lost, deadline, revoked, stalled or shutdown). */
export interface LeaseLostEvent extends EventBase {
  type: "lease-lost";
  epoch: number;
  reason: LeadershipLostReason;
  /** What happened, for a person. */
  detail: string;
}

/** This instance released its lease at the end of a term. */
export interface LeaseReleasedEvent extends EventBase {
  type: "lease-released";
  epoch: number;
  /** How long the term lasted. */
  heldMs: number;
}

/** A contender saw another instance leading (emitted when the observed holder or epoch changes). */
export interface LeaderObservedEvent extends EventBase {
  type: "leader-observed";
  /** The leader's instance id. */
  leader: string;
  epoch: number;
}

/**
 * This instance broke the lease of a holder that had fallen silent (takeover): it had seen the holder's record
 * unchanged for longer than the holder's takeover deadline, with its margins, so the holder had stopped by its own
 * rule.
 */
export interface LeaseBrokenEvent extends EventBase {
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
