import type { CoordinationDeps } from "../deps.js";
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
 * storage SDK retried, a duplicate delivery) finds the claim taken and starts nothing. A delivery of the claimant's
 * message after the first (the one before died, or froze past the message's visibility) runs it after a whole rate
 * window: the delivery before may have started items until it stopped, and its rate permits are this copy's too.
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
 * Whether this delivery of a granted unit may run it: `run` when its copy claimed the grant (or had claimed it: on a
 * delivery after the first, after a whole rate window), `copy` when another copy of the unit had (this one starts
 * nothing, reports nothing), `expired` when its grant has expired (sent back).
 */
export async function claimGrant(
  deps: Pick<CoordinationDeps, "system">,
  message: GrantedWorkMessage,
  gate: UnitGate,
  delivery: { id: string; dequeueCount: number },
  options: Abortable,
): Promise<"run" | "copy" | "expired"> {
  if (gate.expired()) return "expired";
  const claim = keys.grantClaim(message.jobId, message.grant.id);
  const claimed =
    (await deps.system.createText(claim, delivery.id, options)) ||
    (await deps.system.readText(claim, options)) === delivery.id;
  if (!claimed) return "copy";
  if (delivery.dequeueCount > 1 && gate.longestWindowMs > 0) await delay(gate.longestWindowMs, options);
  return gate.expired() ? "expired" : "run";
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
  how: { held?: boolean; expired?: boolean } = {},
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
  };
  const result = { v: 3, jobId, first, count, done: [], failed: [], grant };
  await withTimeout(RESEND_TIMEOUT_MS, (abortSignal) =>
    deps.resultsQueue.send([JSON.stringify(result)], { abortSignal }),
  );
}
