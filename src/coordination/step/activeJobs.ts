import { LeadershipLostError, StaleEpochError } from "../../library/errors.js";
import type { Versioned } from "../../library/fencing/FencedStateStore.js";
import { expireIfDue } from "../jobs/cancel.js";
import type { CoordinationDeps } from "../deps.js";
import { recordCursor } from "../dispatch/recordCursor.js";
import { redispatchAfterLapse } from "../dispatch/redispatch.js";
import { settleHeld } from "../fold/settleHeld.js";
import { jobFlowOf } from "../flow/pools.js";
import { scheduleOf, type JobSchedule } from "../state/jobSchedule.js";
import { isStopped, type JobIndex, type JobState } from "../state/jobState.js";
import { dispatchByPriority } from "./scheduledDispatch.js";
import { writeJobStop } from "../state/jobStops.js";
import { jobFailed, noteProgress, type EndedJob, type Pass, type Step } from "./stepState.js";

/**
 * Most active jobs one pass reads (and may dispatch or end), so that results are folded between them however many jobs
 * are active: each read is a whole job document (at most MAX_JOB_DOCUMENT_BYTES). The next pass, or the next step,
 * goes on from the first job not read (the index's `resumeAt`), so every job gets its turn.
 */
export const MAX_JOBS_PER_PASS = 32;

/**
 * Phase 5: each active job looked after, then the dispatch window filled by priority and fairness
 * (`scheduledDispatch.ts`). Looking after: from where the last pass stopped, round the active list while the step's
 * budget lasts and at most MAX_JOBS_PER_PASS jobs — each job ended if it has, else sent again after a lapsed term. A
 * job whose `notBefore` has not come is passed over unless the step knows its state already (a cancelled one ends):
 * it costs no read until it may start. One job's trouble does not hold up the others. Returns the jobs that ended.
 */
export async function workActiveJobs(
  step: Step,
  pass: Pass,
  index: Versioned<JobIndex> | undefined,
): Promise<EndedJob[]> {
  const schedules = schedulesOf(index?.value);
  const nowMs = step.deps.now();
  const due = schedules.filter((schedule) => schedule.notBeforeAtMs <= nowMs);
  const finished = await lookAfterJobs(step, pass, index?.value.active ?? [], new Set(due.map(({ id }) => id)));
  const ended = new Set(finished.map(({ id }) => id));
  noteWaiting(step, schedules, ended, nowMs);
  await dispatchByPriority(step, pass, schedules, due, ended);
  return finished;
}

/** Every active job's schedule, from its index entry (none: the defaults). */
function schedulesOf(index: JobIndex | undefined): JobSchedule[] {
  return (index?.active ?? []).map((id) => scheduleOf(id, index?.schedule?.[id]));
}

/**
 * The jobs still active that wait for their `notBefore`, and the earliest such time, for the step's report (and its
 * end: a step whose other jobs are all done ends, `passEnd.ts`).
 */
function noteWaiting(step: Step, schedules: readonly JobSchedule[], ended: ReadonlySet<string>, nowMs: number): void {
  const waiting = schedules.filter((schedule) => schedule.notBeforeAtMs > nowMs && !ended.has(schedule.id));
  step.report.scheduledJobs = waiting.length;
  const next = Math.min(...waiting.map((schedule) => schedule.notBeforeAtMs));
  if (Number.isFinite(next)) step.report.nextDueAtMs = next;
  else delete step.report.nextDueAtMs;
}

/**
 * The round of the active list (see {@link workActiveJobs}): from `resumeAt`, at most MAX_JOBS_PER_PASS jobs, each
 * ended or sent again after a lapsed term. A job not yet due is skipped unless its state is known.
 */
async function lookAfterJobs(
  step: Step,
  pass: Pass,
  active: readonly string[],
  due: ReadonlySet<string>,
): Promise<EndedJob[]> {
  const { term, resumeAt } = step;
  const finished: EndedJob[] = [];
  const start = resumeAt === undefined ? 0 : Math.max(0, active.indexOf(resumeAt));
  const order = [...active.slice(start), ...active.slice(0, start)];
  step.resumeAt = undefined;
  let visited = 0;
  for (const id of order) {
    if (!due.has(id) && step.jobs.knownJob(id) === undefined) continue;
    if (visited > 0 && (visited >= MAX_JOBS_PER_PASS || step.pastBudget())) {
      step.resumeAt = id;
      break;
    }
    visited++;
    try {
      const looked = await lookAfterJob(step, pass, id);
      if (looked !== undefined) finished.push(looked);
    } catch (error) {
      // Losing leadership, or a newer leader's write, ends the step.
      if (term.signal.aborted || error instanceof StaleEpochError || error instanceof LeadershipLostError) throw error;
      jobFailed(step, pass, id, error);
    }
    term.reportProgress();
  }
  return finished;
}

/**
 * One active job in a pass: ended (expired, its held items' time come, or ended already), or sent again after a lapsed
 * term (its dispatch comes after the round: `scheduledDispatch.ts`).
 */
export async function lookAfterJob(step: Step, pass: Pass, id: string): Promise<EndedJob | undefined> {
  const { deps, jobs, io, report } = step;
  const read = await jobs.latestJob(id, io);
  const live = read === undefined ? undefined : await expireIfDue(deps, jobs, read, io);
  const job = live === undefined ? undefined : await settleHeld(deps, jobs, live, step.resultsDrainedSinceMs, io);
  if (job?.value.status === "completed" && live?.value.status === "running") report.completedJobs.push(id);
  if (job === undefined || job.value.status !== "running") return endJob(step, id, job);
  // A limited job's units in flight are in the grant ledger: they are sent again when their grants expire, not here.
  const limited = jobFlowOf(deps.registry.get(job.value.kind), job.value) !== undefined;
  const current = limited ? job : await recordUnrecorded(step, await redispatchOnce(step, pass, job));
  noteProgress(step, current.value, 0, 0);
  return undefined;
}

/**
 * Units an earlier pass sent and could not record (its cursor write failed) are recorded first; while that write
 * fails too, the job is not dispatched (its pass fails with the error), rather than sent again at every pass.
 */
async function recordUnrecorded(step: Step, job: Versioned<JobState>): Promise<Versioned<JobState>> {
  const unrecorded = step.unrecorded.get(job.value.id);
  if (unrecorded === undefined) return job;
  const recorded = await recordCursor(step.deps, step.jobs, job, unrecorded, step.io);
  step.unrecorded.delete(job.value.id);
  step.report.failed += recorded.failed;
  return recorded.job;
}

/** A job no longer running, as the pass takes it off the active list: its stop blob, its progress, its event. */
export async function endJob(step: Step, id: string, job: Versioned<JobState> | undefined): Promise<EndedJob> {
  const { deps, io } = step;
  // Workers stop taking its items (a cancellation request wrote this already; an expiry or a failure has not).
  if (job !== undefined && job.value.status !== "completed") await writeJobStop(deps.system, id, io);
  const ended = { id, endedAtMs: job?.value.completedAtMs ?? job?.value.endedAtMs ?? deps.now() };
  if (job !== undefined) {
    noteProgress(step, job.value, 0, 0);
    emitJobEnded(deps, step.term.epoch, job.value);
  }
  return ended;
}

/** After a lapsed term, a job's units in flight sent again, once a step (a pass that failed on it tries again). */
export async function redispatchOnce(step: Step, pass: Pass, job: Versioned<JobState>): Promise<Versioned<JobState>> {
  const { deps, term, redispatched } = step;
  const { id } = job.value;
  if (term.previousEnd !== "lapsed" || redispatched.has(id)) return job;
  const again = await redispatchAfterLapse(deps, step.jobs, job, { ...step.io, chunks: step.chunks });
  // Once it has succeeded: a pass that failed on the job tries again.
  redispatched.add(id);
  if (again.units > 0) {
    step.report.redispatched += again.items;
    pass.work = true;
    deps.logger.info(
      `Job ${id}: sent again ${again.items} items in ${again.units} units that were in flight when the last term lapsed.`,
      { instanceId: deps.instanceId, epoch: term.epoch },
    );
  }
  return again.job;
}

/** The event of a job that has ended, as the step takes it off the active list. */
function emitJobEnded(deps: CoordinationDeps, epoch: number, job: JobState): void {
  const fields = {
    instanceId: deps.instanceId,
    atMs: deps.now(),
    epoch,
    jobId: job.id,
    done: job.doneCount,
    failed: job.failedCount,
  };
  if (job.status === "completed") deps.emit({ type: "job-completed", ...fields });
  else if (isStopped(job.status))
    deps.emit({
      type: job.status === "cancelled" ? "job-cancelled" : "job-expired",
      ...fields,
      skipped: job.skippedCount,
    });
  else {
    deps.logger.warn(`Job ${job.id} failed: ${job.failureReason ?? "no reason recorded"}.`, {
      instanceId: deps.instanceId,
      epoch,
    });
    deps.emit({ type: "job-failed", ...fields, reason: job.failureReason });
  }
}
