import type { CoordinationDeps } from "../deps.js";
import { claimText, type ClaimEnd } from "../flow/claim.js";
import { UnitGate } from "../flow/unitGate.js";
import type { GrantedWorkMessage, GrantReport } from "../ports/messages.js";
import { delay, type Abortable } from "../../library/util/delay.js";
import { withTimeout } from "../../library/util/timeout.js";
import { keys } from "../state/jobState.js";
import { RESEND_TIMEOUT_MS } from "./workerResend.js";

/**
 * What a worker does besides running items for a granted unit (one whose job is limited: `v: 3`). A grant's shares are
 * the leader's to count once, so no two copies of a unit may run under one grant: a copy runs it only once it has
 * claimed the grant (a blob created if absent, holding its message id) — a second copy of the message (a send the
 * storage SDK retried, a duplicate delivery) finds the claim taken and starts nothing. The claimant marks the claim
 * reported once its result (or its give-back) is sent, and released when its run failed and it leaves the unit to the
 * host's retry. A later delivery of the claimant's message runs under the grant only when the claim is released (the
 * delivery before stopped every item; this one waits a whole rate window first, since that one's starts used the
 * grant's permits). When the claim is reported, the unit was reported (the message came back because its delete
 * failed, and the leader may have given the grant's shares to another unit already), so it does nothing; when it is
 * not marked, the delivery before may still run — frozen past the message's visibility, not dead — so the unit goes
 * back to the leader held: its shares stay counted until the grant expires, and it is sent again under a new grant.
 * A grant that has expired, and a run that fails or is shut down, send the unit back (a regrant) instead of leaving it
 * to the queue's redelivery. Its result reports the grant, so the leader takes its shares back.
 */

/** What sending a granted unit's report needs. */
type GrantDeps = Pick<CoordinationDeps, "resultsQueue" | "logger" | "instanceId">;

/** The gate a granted unit's items run through; its expiry read on the worker's wall clock (`nowMs`). */
export function gateOf(message: GrantedWorkMessage, nowMs: () => number): UnitGate {
  return new UnitGate(message.grant, message.inputs.length, { monotonicMs: () => performance.now(), nowMs });
}

/**
 * Whether this delivery of a granted unit may run it: `run` when it claimed the grant (or an earlier delivery of this
 * message claimed and released it: after a whole rate window), `copy` when another copy of the unit had (this one
 * starts nothing, reports nothing), `reported` when an earlier delivery of this message reported the unit (nothing to
 * do), `earlier` when an earlier delivery claimed it and may still run it (frozen or dead: it goes back to the leader
 * held), `expired` when its grant has expired (sent back).
 */
export async function claimGrant(
  deps: Pick<CoordinationDeps, "system">,
  message: GrantedWorkMessage,
  gate: UnitGate,
  delivery: { id: string },
  options: Abortable,
): Promise<"run" | "copy" | "reported" | "earlier" | "expired"> {
  if (gate.expired()) return "expired";
  const claim = keys.grantClaim(message.jobId, message.grant.id);
  if (await deps.system.createText(claim, delivery.id, options)) return "run";
  const text = await deps.system.readText(claim, options);
  if (text === claimText(delivery, "reported")) return "reported";
  if (text === delivery.id) return "earlier";
  if (text !== claimText(delivery, "released")) return "copy";
  if (gate.longestWindowMs > 0) await delay(gate.longestWindowMs, options);
  return gate.expired() ? "expired" : "run";
}

/**
 * Marks a claim as its claimant ends: `reported` once its result or give-back was sent (a later delivery of its
 * message does nothing), `released` when its run failed and every item stopped (a later delivery runs it). Best
 * effort, within {@link RESEND_TIMEOUT_MS} and without the caller's signal (a shutdown may have aborted it): without
 * the mark, a later delivery gives the unit back held, which costs time, never a limit.
 */
export async function markClaim(
  deps: Pick<CoordinationDeps, "system" | "logger" | "instanceId">,
  message: GrantedWorkMessage,
  delivery: { id: string },
  end: ClaimEnd,
): Promise<void> {
  const claim = keys.grantClaim(message.jobId, message.grant.id);
  try {
    await withTimeout(RESEND_TIMEOUT_MS, (abortSignal) =>
      deps.system.writeText(claim, claimText(delivery, end), { abortSignal }),
    );
  } catch (error) {
    deps.logger.warn(
      `Work unit of job ${message.jobId}, items ${message.first}–${message.first + message.inputs.length - 1}: its grant's claim could not be marked ${end} (${error instanceof Error ? error.message : String(error)}); a later delivery of its message gives it back held.`,
      { instanceId: deps.instanceId },
    );
  }
}

/** The grant as the unit's result reports it. */
export function grantReport(message: GrantedWorkMessage, gate: UnitGate, regrant = false): GrantReport {
  const lastStartAgoMs = gate.lastStartAgoMs();
  return {
    id: message.grant.id,
    starts: gate.startCount,
    ...(lastStartAgoMs === undefined ? {} : { lastStartAgoMs }),
    ...(regrant ? { regrant: true as const } : {}),
  };
}

/**
 * Sends a granted unit back to the leader whole: nothing it did counts (its items done so far are processed again
 * when the unit is sent again, as on any redelivery), its grant's shares are taken back (`held`: at the grant's expiry,
 * since another copy may run until then), and the unit is sent again with a new grant while its job still needs it.
 * `why` is logged. Sent within {@link RESEND_TIMEOUT_MS} and without the caller's signal, which a shutdown aborted.
 */
export async function sendRegrant(
  deps: GrantDeps,
  message: GrantedWorkMessage,
  gate: UnitGate,
  why: string,
  how: { held?: boolean; expired?: boolean; lost?: boolean } = {},
): Promise<void> {
  const { jobId, first } = message;
  const count = message.inputs.length;
  deps.logger.info(
    `Work unit of job ${jobId}, items ${first}–${first + count - 1}: ${why}; sent back to the leader with its grant ${message.grant.id}.`,
    { instanceId: deps.instanceId },
  );
  const grant = {
    ...grantReport(message, gate, true),
    ...(how.held === true ? { held: true as const } : {}),
    ...(how.expired === true ? { expired: true as const } : {}),
    ...(how.lost === true ? { lost: true as const } : {}),
  };
  const result = { v: 3, jobId, first, count, done: [], failed: [], grant };
  await withTimeout(RESEND_TIMEOUT_MS, (abortSignal) =>
    deps.resultsQueue.send([JSON.stringify(result)], { abortSignal }),
  );
}
