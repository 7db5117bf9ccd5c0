import { Bitmap } from "./bitmap.js";
import type { JobState } from "./jobState.js";

/**
 * How long held items wait for their unit's own result once nothing else of the job is left, in ms, from the last
 * item held: 10 minutes. About what the Functions host gives a unit it delivered before it hands it out again (its
 * message's visibility, renewed while the function runs), and well past the seconds a re-sent copy of a unit or a
 * result already on the queue takes to be folded; a job whose workers only ever send garbage ends this much later than
 * it did when such a failure was final. Internal, not a setting (`CoordinationDeps.inferredFailureHoldMs`).
 */
export const INFERRED_FAILURE_HOLD_MS = 10 * 60 * 1000;

/**
 * A job's held items: those whose failure the leader inferred from a message that named their unit without reporting
 * on it — a result it could not read (forged, or damaged), a work-poison message (the host's after its retries, or a
 * worker's rejection). Such a message is no proof: the unit may still be running, or another copy of it (a worker's
 * re-send on shutdown, a re-send after a lapsed term). So the items are held, neither done nor failed: the unit's own
 * result decides them whenever it comes, and they fail only when the job has nothing else left and the hold has passed
 * (`fold/settleHeld.ts`). Undefined when none is held.
 */
export function heldItems(state: HeldParts): Bitmap | undefined {
  if (state.heldBits === undefined) return undefined;
  const held = Bitmap.fromBase64(state.heldBits, state.itemCount);
  // An item counted since is not held: a leader of a version before holding (a rolling deploy) counts held items
  // as it folds, and keeps this field as one it does not know.
  for (const bits of [state.doneBits, state.failedBits]) {
    const counted = Bitmap.fromBase64(bits, state.itemCount);
    for (let item = 0; item < state.itemCount; item++) if (counted.has(item)) held.delete(item);
  }
  return held;
}

/** The fields of a job state its held items are read from. */
type HeldParts = Pick<JobState, "heldBits" | "itemCount" | "doneBits" | "failedBits">;

/** How many of a job's items are held. */
export function heldCount(state: HeldParts): number {
  return heldItems(state)?.count() ?? 0;
}

/**
 * The job with its held items let go, for a job that ends otherwise than by its items (cancelled, expired, failed as
 * a whole): they were never failed, so they count as the job's other unfinished items do, and their inferred reasons
 * leave the recorded failures.
 */
export function withoutHeld(state: JobState): JobState {
  const held = heldItems(state);
  if (held === undefined) return state;
  const next: JobState = { ...state, failures: state.failures.filter((failure) => !held.has(failure.item)) };
  delete next.heldBits;
  delete next.heldUntilMs;
  return next;
}

/**
 * Items of a job sent and without a result yet: not those held (issue 43: their failure inferred, waiting for their
 * unit's own result, which may never come — counted as in flight, a window all held would never send the job's last
 * items, and held items fail only when nothing else is left), nor those waiting to be sent again.
 */
export function inFlightOf(job: JobState): number {
  return Math.max(0, job.dispatched - job.doneCount - job.failedCount - notInFlight(job));
}

/** Dispatched items of a job that are neither done nor failed but not in flight: held, or on its resend list. */
function notInFlight(job: JobState): number {
  const held = heldItems(job);
  if (held === undefined) return (job.resend ?? []).reduce((sum, unit) => sum + unit.count, 0);
  let count = held.count();
  for (const unit of job.resend ?? [])
    for (let item = unit.first; item < unit.first + unit.count; item++) if (!held.has(item)) count++;
  return count;
}
