import { Bitmap } from "../state/bitmap.js";
import type { JobState } from "../state/jobState.js";
import { MAX_EXPIRIES, MAX_LOST_DELIVERIES, MAX_REGRANTS } from "./grant.js";

/**
 * A unit of a limited job to send again with a new grant (`regrants`: grants it has had so far; `expiries`: how many of
 * them expired, absent for none).
 */
export type ResendUnit = NonNullable<JobState["resend"]>[number];

/** Most units a job's resend list holds: one per unit in flight, which grants bound. */
export const MAX_RESEND_UNITS = 1000;

/**
 * The job's resend list with `units` added — each unit once, only while some of its items are neither done nor
 * failed, and only one inside the job — and the units whose grants expired {@link MAX_EXPIRIES} times, whose
 * deliveries were lost {@link MAX_LOST_DELIVERIES} times, or that had {@link MAX_REGRANTS} grants in all, whose open
 * items fail instead (with the reason, so the job ends rather than send a unit that never finishes for ever).
 * Undefined when nothing changes.
 */
export function withResends(
  state: JobState,
  units: readonly ResendUnit[],
): { resend: ResendUnit[]; failed: { item: number; reason: string }[] } | undefined {
  if (units.length === 0 || state.status !== "running") return undefined;
  const resend = [...(state.resend ?? [])];
  const failed: { item: number; reason: string }[] = [];
  const done = Bitmap.fromBase64(state.doneBits, state.itemCount);
  const failedBits = Bitmap.fromBase64(state.failedBits, state.itemCount);
  for (const unit of units) {
    if (unit.first + unit.count > Math.min(state.itemCount, state.dispatched)) continue;
    const open: number[] = [];
    for (let item = unit.first; item < unit.first + unit.count; item++)
      if (!done.has(item) && !failedBits.has(item)) open.push(item);
    if (open.length === 0 || resend.some((listed) => listed.first === unit.first)) continue;
    const reason = exhausted(unit);
    if (reason !== undefined) {
      failed.push(...open.map((item) => ({ item, reason })));
      continue;
    }
    if (resend.length < MAX_RESEND_UNITS) resend.push(unit);
  }
  const before = state.resend ?? [];
  if (failed.length === 0 && resend.length === before.length) return undefined;
  return { resend, failed };
}

/** Why a unit may have no more grants, or undefined while it may. */
function exhausted(unit: ResendUnit): string | undefined {
  const items = `its unit (items ${unit.first}–${unit.first + unit.count - 1})`;
  const expiries = unit.expiries ?? 0;
  if (expiries >= MAX_EXPIRIES)
    return `${items} had ${expiries} grants that expired before it finished: its items take longer than a grant lasts`;
  const lost = unit.lost ?? 0;
  if (lost >= MAX_LOST_DELIVERIES)
    return `${items} was being run ${lost} times when its process died or froze (a later delivery found its run never reported): an item may be killing its process`;
  if (unit.regrants >= MAX_REGRANTS)
    return `${items} had ${unit.regrants} grants, ${expiries} of them expired and the others given back (shut down, or its run failed), and never finished`;
  return undefined;
}
