import type { Versioned } from "../../library/fencing/FencedStateStore.js";
import type { Abortable } from "../../library/util/delay.js";
import type { CoordinationDeps } from "../deps.js";
import { Bitmap } from "../state/bitmap.js";
import { holdsConcurrency } from "../state/grantLedger.js";
import { heldItems } from "../state/heldItems.js";
import type { JobState } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";
import { RESULT_VISIBILITY_S } from "./foldResultBatch.js";

/**
 * The job with its held items failed, when it is time (else undefined): every other item is done or failed, its hold
 * has ended (`heldUntilMs`), and a results fold that began at least {@link RESULT_VISIBILITY_S} after that took
 * every result the queue showed and left none waiting (`drainedSinceMs`; `FoldReport.drained`). So a unit's own result
 * that reached the queue before the hold ended has been folded first — even one a leader received and then died with,
 * hidden that long. No held item's unit may still be to report: on the job's resend list, or covered by a live grant
 * (`granted`). Held items are failed only when the job ends with them: while it runs they stay held, so a re-send
 * after a lapsed term sends their units whole (a failed item would split its unit's run of unfinished items).
 */
export function heldOut(
  state: JobState,
  drainedSinceMs: number | undefined,
  nowMs: number,
  granted: readonly { first: number; count: number }[] = [],
): JobState | undefined {
  const held = heldItems(state);
  if (state.status !== "running" || held === undefined) return undefined;
  // A hold without its end (written by hand, or damaged) has ended: the job must be able to end.
  const until = state.heldUntilMs ?? 0;
  if (drainedSinceMs === undefined || drainedSinceMs < until + RESULT_VISIBILITY_S * 1000) return undefined;
  // A held item whose unit is still to report is decided by its result: a unit on the resend list (a limited job's
  // unit given back for a new grant, however long its pools keep it waiting), or one a live grant covers (it may be
  // running). Both are bounded by the unit's grants (each expires; MAX_REGRANTS).
  const units = [...(state.resend ?? []), ...granted];
  if (units.some((unit) => Array.from({ length: unit.count }, (_, at) => unit.first + at).some((at) => held.has(at))))
    return undefined;
  const count = held.count();
  if (state.doneCount + state.failedCount + count < state.itemCount) return undefined;
  const failed = Bitmap.fromBase64(state.failedBits, state.itemCount);
  for (let item = 0; item < state.itemCount; item++) if (held.has(item)) failed.add(item);
  const next: JobState = {
    ...state,
    failedBits: failed.toBase64(),
    failedCount: state.failedCount + count,
    status: "completed",
    completedAtMs: nowMs,
  };
  delete next.heldBits;
  delete next.heldUntilMs;
  return next;
}

/**
 * Ends a running job whose held items' time has come ({@link heldOut}): they fail with the reasons recorded when they
 * were held, and the job completes (a fenced write). Returns the job as it now is.
 */
export async function settleHeld(
  deps: Pick<CoordinationDeps, "now" | "logger" | "instanceId">,
  jobs: JobStore,
  job: Versioned<JobState>,
  drainedSinceMs: number | undefined,
  options: Abortable,
): Promise<Versioned<JobState>> {
  const now = deps.now();
  if (heldOut(job.value, drainedSinceMs, now) === undefined) return job;
  // Only then the ledger (read once a step): the job's units that may be running under a grant.
  const ledger = await jobs.ledger.read(options);
  const granted = ledger.grants.filter((grant) => grant.jobId === job.value.id && holdsConcurrency(grant, now));
  if (heldOut(job.value, drainedSinceMs, now, granted) === undefined) return job;
  const settled =
    (await jobs.updateJob(job.value.id, (state) => heldOut(state, drainedSinceMs, now, granted), options, job)) ?? job;
  if (settled.value.status === "completed" && job.value.status === "running")
    deps.logger.warn(
      `Job ${job.value.id}: ${settled.value.failedCount - job.value.failedCount} held item(s) failed: their failure was inferred from messages that named their units (results the leader could not read, poisoned copies), and no result of their units came within the hold.`,
      { instanceId: deps.instanceId, epoch: jobs.epoch },
    );
  return settled;
}
