import { LeadershipLostError, StaleEpochError } from "../../library/errors.js";
import type { CoordinationDeps } from "../deps.js";
import { dispatchJob } from "../dispatch/dispatch.js";
import { dispatchLimitedJob } from "../dispatch/dispatchLimited.js";
import { jobFlowOf } from "../flow/pools.js";
import type { Sized } from "../scheduling/fairShare.js";
import type { JobSchedule } from "../state/jobSchedule.js";
import { inFlightOf } from "../state/heldItems.js";
import type { JobState } from "../state/jobState.js";
import { jobFailed, noteProgress, type Pass, type Step } from "./stepState.js";

/**
 * The dispatch of a pass (docs/how-to/limit.md): the room left in the dispatch window shared by every job — at most
 * {@link maxInFlightTotal} items on the queue without a result, and at most the pass's budget (DISPATCH_BATCH_SIZE)
 * sent — handed out by the step's `FairShare`: strictly by priority, then fairly by fairness key, then round robin
 * among one key's jobs. Each job still keeps its own window (`maxInFlight`, in `dispatch.ts`), so one job alone
 * runs as before, and a second finds room at once.
 */

/**
 * Most items on the queue without a result over every job: twice one job's window (`maxInFlight`), so that one job
 * never holds all of it (a job that arrives finds room at once), while many jobs cannot stack a window each on the
 * queue ahead of a newcomer's first unit. @default 2 × `maxInFlight`
 */
export function maxInFlightTotal(deps: Pick<CoordinationDeps, "maxInFlight" | "maxInFlightTotal">): number {
  return deps.maxInFlightTotal ?? 2 * deps.maxInFlight;
}

/** Items of a limited job waiting to be sent again with a new grant (sent once, not in flight now). */
function toResend(job: JobState): number {
  return (job.resend ?? []).reduce((sum, unit) => sum + unit.count, 0);
}

/**
 * Fills the dispatch window (see the module comment) from the jobs that may start (`due`) and whose state the step
 * knows, running, with items left to send; `ended` are the jobs this pass ended. Each job is dispatched at most once
 * (one write of its cursor), with what the step's `FairShare` planned for it. What the step does not know of a job
 * (not read yet in this step: only with more than MAX_JOBS_PER_PASS jobs active) counts as nothing in flight until it
 * is read.
 */
export async function dispatchByPriority(
  step: Step,
  pass: Pass,
  active: readonly JobSchedule[],
  due: readonly JobSchedule[],
  ended: ReadonlySet<string>,
): Promise<void> {
  const { deps, jobs, term } = step;
  let inFlight = 0;
  for (const { id } of active) {
    const job = jobs.knownJob(id)?.value;
    if (job?.status === "running") inFlight += inFlightOf(job);
  }
  const candidates: Sized[] = [];
  const nowMs = deps.now();
  for (const schedule of due) {
    const job = jobs.knownJob(schedule.id)?.value;
    if (ended.has(schedule.id) || pass.failedJobs.has(schedule.id) || job?.status !== "running") continue;
    // Past its deadline: the round of the jobs expires it when it reaches it (not necessarily this pass).
    if (job.deadlineAtMs !== undefined && job.deadlineAtMs <= nowMs) continue;
    // What dispatchJob sends at most (its own window, the items left), as the plan counts it.
    const capacity = Math.min(job.itemCount - job.dispatched + toResend(job), deps.maxInFlight - inFlightOf(job));
    // A limited job with items unfinished is dispatched even with nothing left to send as far as its state shows: the
    // grants of its units in flight may have expired, which only its dispatch finds (and lists the units to resend).
    const unfinished = job.itemCount - job.doneCount - job.failedCount > 0;
    if (capacity <= 0 && unfinished && jobFlowOf(deps.registry.get(job.kind), job) !== undefined) {
      candidates.push({ ...schedule, capacity: 1 });
      continue;
    }
    if (capacity > 0) candidates.push({ ...schedule, capacity });
  }
  const room = Math.min(deps.dispatchBatchSize, maxInFlightTotal(deps) - inFlight);
  if (room <= 0 || candidates.length === 0) return;
  for (const [index, { id, items }] of step.fairShare.plan(candidates, room).entries()) {
    // As the round of the jobs: the first goes whatever the budget (a step makes progress), the others within it.
    if (index > 0 && step.pastBudget()) break;
    let sent = 0;
    try {
      sent = await dispatchOne(step, pass, id, items);
    } catch (error) {
      // Losing leadership, or a newer leader's write, ends the step; one job's trouble, only its part of the pass.
      if (term.signal.aborted || error instanceof StaleEpochError || error instanceof LeadershipLostError) throw error;
      jobFailed(step, pass, id, error);
    }
    step.fairShare.correct(id, sent - items);
    term.reportProgress();
  }
}
/** One job's dispatch of up to `budget` items (whole units: the last may go past it); returns the items handled. */
async function dispatchOne(step: Step, pass: Pass, id: string, budget: number): Promise<number> {
  const { deps, jobs, term, io, report } = step;
  const job = jobs.knownJob(id) ?? (await jobs.latestJob(id, io));
  if (job === undefined) return 0;
  // A limited job's units go out as its limits' grants allow (`dispatchLimited.ts`), within the same share.
  const flow = jobFlowOf(deps.registry.get(job.value.kind), job.value);
  const { sent, failed, unrecorded } =
    flow === undefined
      ? await dispatchJob(deps, jobs, job, budget, {
          ...io,
          chunks: step.chunks,
          progress: term,
          monotonicMs: step.monotonicMs,
        })
      : {
          ...(await dispatchLimitedJob(deps, jobs, job, flow, budget, { ...io, chunks: step.chunks })),
          unrecorded: undefined,
        };
  noteProgress(step, job.value, sent + failed, failed);
  report.dispatched += sent;
  report.failed += failed;
  if (sent + failed > 0) pass.work = true;
  if (unrecorded !== undefined) {
    // Units sent that no cursor write recorded: recorded first at the job's next look (`activeJobs.ts`).
    step.unrecorded.set(id, unrecorded);
    throw unrecorded.error;
  }
  return sent + failed;
}
