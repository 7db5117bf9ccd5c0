import type { Versioned } from "../../library/fencing/FencedStateStore.js";
import type { Abortable } from "../../library/util/delay.js";
import type { CoordinationDeps } from "../deps.js";
import { foldOutcomes, type UnitOutcome } from "../fold/foldOutcomes.js";
import type { FoldCounts } from "../fold/foldReport.js";
import type { JobState } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";

/** Units sent that the job's cursor does not record yet: the cursor past them, the items failed unsent before it. */
export interface UnrecordedCursor {
  cursor: number;
  failures: UnitOutcome["failed"];
  /** Why the dispatch failed: the cursor write's error, or a later send's. */
  error: unknown;
}

/**
 * Records units a dispatch sent but could not record (`DispatchReport.unrecorded`, `dispatch.ts`): the job's cursor
 * past them and the items failed unsent, in one fenced write. Returns the job as written, and how many items it failed.
 * @throws as the write does (storage may still refuse it: the job is then not dispatched in this pass).
 */
export async function recordCursor(
  deps: CoordinationDeps,
  jobs: JobStore,
  job: Versioned<JobState>,
  unrecorded: Pick<UnrecordedCursor, "cursor" | "failures">,
  options: Abortable = {},
): Promise<{ job: Versioned<JobState>; failed: number }> {
  const { cursor: end, failures: failed } = unrecorded;
  const attempt: { counts: FoldCounts } = { counts: { folded: 0, duplicates: 0, failed: 0 } };
  const written =
    (await jobs.updateJob(
      job.value.id,
      (current) => {
        attempt.counts = { folded: 0, duplicates: 0, failed: 0 }; // may run again after a lost race
        const advanced = { ...current, dispatched: Math.max(current.dispatched, end) };
        const next =
          failed.length > 0
            ? (foldOutcomes(deps, advanced, [{ done: [], failed }], attempt.counts) ?? advanced)
            : advanced;
        return next.dispatched === current.dispatched && next === advanced ? undefined : next;
      },
      options,
      job,
    )) ?? job;
  return { job: written, failed: attempt.counts.failed };
}
