import type { LeadershipLostReason } from "../errors";

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

/** Every leadership event. */
export type LeadershipEvent =
  LeaseAcquiredEvent | LeaseRenewedEvent | LeaseLostEvent | LeaseReleasedEvent | LeaderObservedEvent;
