import type { CoordinationDeps } from "../deps.js";
import { UnitGate } from "../flow/unitGate.js";
import type { GrantedWorkMessage, GrantReport } from "../ports/messages.js";
import { delay, type Abortable } from "../../library/util/delay.js";

/**
 * What a worker does besides running items for a granted unit (one whose job is limited: `v: 3`): before its first
 * item, on a delivery after the first, it waits a whole rate window — the delivery before may have started items until
 * it failed, and its rate permits are this copy's too —, and a grant that has expired sends the unit back whole (a
 * regrant) instead of running it. Its result reports the grant, so the leader takes its shares back.
 */

/** What sending a granted unit's report needs. */
type GrantDeps = Pick<CoordinationDeps, "resultsQueue" | "logger" | "instanceId">;

/** The gate a granted unit's items run through; its expiry read on the worker's wall clock (`nowMs`). */
export function gateOf(message: GrantedWorkMessage, nowMs: () => number): UnitGate {
  return new UnitGate(message.grant, message.inputs.length, { monotonicMs: () => performance.now(), nowMs });
}

/**
 * Before a granted unit's first item: false when its grant has expired (the caller sends it back); otherwise, on a
 * delivery after the first, waits the gate's longest rate window first (a shutdown meanwhile throws, as a shutdown
 * during its items does) and returns true.
 */
export async function readyToRun(gate: UnitGate, dequeueCount: number, options: Abortable): Promise<boolean> {
  if (gate.expired()) return false;
  if (dequeueCount > 1 && gate.longestWindowMs > 0) await delay(gate.longestWindowMs, options);
  return !gate.expired();
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
 * when the unit is sent again, as on any redelivery), its grant's shares are taken back, and the unit is sent again
 * with a new grant while its job still needs it. `why` is logged.
 */
export async function sendRegrant(
  deps: GrantDeps,
  message: GrantedWorkMessage,
  gate: UnitGate,
  why: string,
  options: Abortable,
): Promise<void> {
  const { jobId, first } = message;
  const count = message.inputs.length;
  deps.logger.info(
    `Work unit of job ${jobId}, items ${first}–${first + count - 1}: ${why}; sent back to the leader with its grant ${message.grant.id}.`,
    { instanceId: deps.instanceId },
  );
  const result = { v: 3, jobId, first, count, done: [], failed: [], grant: grantReport(message, gate, true) };
  await deps.resultsQueue.send([JSON.stringify(result)], options);
}
