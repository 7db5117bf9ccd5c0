import { LeadershipLostError, StaleEpochError } from "../../library/errors.js";
import type { FencedStateStore, Versioned } from "../../library/fencing/FencedStateStore.js";
import type { LeadershipTerm } from "../../library/leadership/Term.js";
import type { CoordinationDeps } from "../deps.js";
import { RETENTION_SWEEP_INTERVAL_MS, noteEnded, removeExpiredJobs, type RetentionOptions } from "../jobs/retention.js";
import type { JobIndex } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";
import { recordTermEnd } from "../state/termHistory.js";
import type { EndedJob, Pass, Step } from "./stepState.js";

/**
 * Phase 6: the pass's end — the report's counts, the ended jobs' retention markers and the index, and once a step the
 * retention sweep. Returns whether the step ends: its budget spent, nothing left to do, or its passes done.
 */
export async function endPass(
  step: Step,
  pass: Pass,
  index: Versioned<JobIndex> | undefined,
  finished: EndedJob[],
): Promise<boolean> {
  const { deps, jobs, io, report, resumeAt } = step;
  report.activeJobs = (index?.value.active.length ?? 0) - finished.length;
  report.jobs = [...step.progress.values()];
  // Jobs waiting for their `notBefore` keep no step going: the sentinel starts one when the first is due (leaderStep).
  const ending =
    step.pastBudget() ||
    (!pass.work && report.activeJobs - report.scheduledJobs <= 0) ||
    report.passes >= (step.options.maxPasses ?? Infinity);
  // Each ended job's retention marker first: a crash before the index write leaves the job active, and the next
  // pass writes the same marker again.
  await Promise.all(finished.map(({ id, endedAtMs }) => noteEnded(deps, id, endedAtMs, io)));
  // The position is written with the index's other changes, or once at the end of a step that did not reach every
  // job: at most one small write per step for it.
  if (finished.length > 0 || (ending && resumeAt !== step.storedResumeAt)) {
    await jobs.updateIndex({ remove: finished.map(({ id }) => id), resumeAt: resumeAt ?? null }, io);
    step.storedResumeAt = resumeAt;
  }
  // Once an hour (and in every step while one is unfinished), ended jobs past their retention are removed — after
  // the pass has recorded the jobs that ended, and never holding up the step (`sweepRetention`).
  if (report.passes === 1 && deps.now() - (index?.value.sweptAtMs ?? 0) >= RETENTION_SWEEP_INTERVAL_MS)
    report.removedJobs += await sweepRetention(deps, jobs, { ...io, pastBudget: step.pastBudget });
  return ending;
}

/**
 * Removes the ended jobs past their retention (`retention.ts`: one job's trouble is reported and put off there) and,
 * when nothing due is left, records the sweep in the index (one small write an hour). Any other failure — a listing,
 * the index — is logged and the step goes on: the next step sweeps again. Only an abort, a lost term or a newer
 * leader's write is thrown. Returns the jobs removed.
 */
export async function sweepRetention(
  deps: CoordinationDeps,
  jobs: JobStore,
  options: RetentionOptions,
): Promise<number> {
  let removed = 0;
  try {
    const retention = await removeExpiredJobs(deps, jobs, options);
    removed = retention.removed;
    if (retention.complete) await jobs.updateIndex({ sweptAtMs: deps.now() }, options);
  } catch (error) {
    if (options.abortSignal?.aborted === true || error instanceof StaleEpochError) throw error;
    if (error instanceof LeadershipLostError) throw error;
    deps.logger.warn(
      `Removing ended jobs past their retention failed; the step goes on, and the next step tries again: ${error instanceof Error ? error.message : String(error)}`,
      { instanceId: deps.instanceId, epoch: jobs.epoch },
    );
  }
  return removed;
}

/**
 * Records in the term history when this step ended and how the term before it ended (`recordTermEnd`), for the status
 * page. It changes nothing the coordination reads: a failure is logged, and only an abort is thrown.
 */
export async function noteStepEnd(
  deps: CoordinationDeps,
  fenced: FencedStateStore,
  term: LeadershipTerm,
): Promise<void> {
  try {
    await recordTermEnd(fenced, term, deps.now(), { abortSignal: term.signal });
  } catch (error) {
    if (term.signal.aborted) throw error;
    deps.logger.warn(
      `The term history could not record the end of this step (the status page shows it without): ${error instanceof Error ? error.message : String(error)}`,
      { instanceId: deps.instanceId, epoch: term.epoch },
    );
  }
}
