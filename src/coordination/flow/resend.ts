import { Bitmap } from "../state/bitmap.js";
import type { JobState } from "../state/jobState.js";
import { MAX_REGRANTS } from "./grant.js";

/** A unit of a limited job to send again with a new grant (`regrants`: grants it has had so far). */
export type ResendUnit = NonNullable<JobState["resend"]>[number];

/** Most units a job's resend list holds: one per unit in flight, which grants bound. */
export const MAX_RESEND_UNITS = 1000;

/**
 * The job's resend list with `units` added — each unit once, only while some of its items are neither done nor
 * failed, and only one inside the job — and the units that have had {@link MAX_REGRANTS} grants already, whose open
 * items fail instead (with the reason, so the job ends rather than send a unit that never fits its grant for ever).
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
    if (unit.regrants >= MAX_REGRANTS) {
      const reason = `its unit (items ${unit.first}–${unit.first + unit.count - 1}) had ${unit.regrants} grants, each of which expired before it finished: its items take longer than a grant lasts`;
      failed.push(...open.map((item) => ({ item, reason })));
      continue;
    }
    if (resend.length < MAX_RESEND_UNITS) resend.push(unit);
  }
  const before = state.resend ?? [];
  if (failed.length === 0 && resend.length === before.length) return undefined;
  return { resend, failed };
}
