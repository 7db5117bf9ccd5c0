import { LeadershipLostError, StaleEpochError } from "../../library/errors.js";
import type { Versioned } from "../../library/fencing/FencedStateStore.js";
import { expireIfDue } from "../jobs/cancel.js";
import type { CoordinationDeps } from "../deps.js";
import { dispatchJob } from "../dispatch/dispatch.js";
import { redispatchAfterLapse } from "../dispatch/redispatch.js";
import { dispatchLimitedJob } from "../dispatch/dispatchLimited.js";
import { jobFlowOf } from "../flow/pools.js";
import { isStopped, type JobIndex, type JobState } from "../state/jobState.js";
import { writeJobStop } from "../state/jobStops.js";
import { jobFailed, noteProgress, type EndedJob, type Pass, type Step } from "./stepState.js";

/**
 * Most active jobs one pass reads (and may dispatch or end), so that results are folded between them however many jobs
 * are active: each read is a whole job document (at most MAX_JOB_DOCUMENT_BYTES). The next pass, or the next step,
 * goes on from the first job not read (the index's `resumeAt`), so every job gets its turn.
 */
export const MAX_JOBS_PER_PASS = 32;

/**
 * Phase 5: from where the last pass stopped, round the active list while the dispatch budget lasts and at most
 * MAX_JOBS_PER_PASS jobs: each job ended if it has, else sent again after a lapsed term, and dispatched. One job's
 * trouble does not hold up the others. Returns the jobs that ended.
 */
export async function workActiveJobs(
  step: Step,
  pass: Pass,
  index: Versioned<JobIndex> | undefined,
): Promise<EndedJob[]> {
  const { term, resumeAt } = step;
  const active = index?.value.active ?? [];
  const finished: EndedJob[] = [];
  let budget = step.deps.dispatchBatchSize;
  const start = resumeAt === undefined ? 0 : Math.max(0, active.indexOf(resumeAt));
  const order = [...active.slice(start), ...active.slice(0, start)];
  step.resumeAt = undefined;
  for (const [visited, id] of order.entries()) {
    if (visited > 0 && (visited >= MAX_JOBS_PER_PASS || step.pastBudget())) {
      step.resumeAt = id;
      break;
    }
    try {
      const worked = await workJob(step, pass, id, budget);
      if ("ended" in worked) {
        finished.push(worked.ended);
        continue;
      }
      budget -= worked.used;
    } catch (error) {
      // Losing leadership, or a newer leader's write, ends the step.
      if (term.signal.aborted || error instanceof StaleEpochError || error instanceof LeadershipLostError) throw error;
      jobFailed(step, pass, id, error);
    }
    term.reportProgress();
  }
  return finished;
}

/** One active job in a pass: ended (expired, or ended already), or sent again after a lapsed term and dispatched. */
export async function workJob(
  step: Step,
  pass: Pass,
  id: string,
  budget: number,
): Promise<{ ended: EndedJob } | { used: number }> {
  const { deps, jobs, term, io, report } = step;
  const read = await jobs.latestJob(id, io);
  const job = read === undefined ? undefined : await expireIfDue(deps, jobs, read, io);
  if (job === undefined || job.value.status !== "running") return { ended: await endJob(step, id, job) };
  // A limited job's units in flight are in the grant ledger: they are sent again when their grants expire, not here.
  const flow = jobFlowOf(deps.registry.get(job.value.kind), job.value);
  const { sent, failed } =
    flow === undefined
      ? await dispatchJob(deps, jobs, await redispatchOnce(step, pass, job), budget, {
          ...io,
          chunks: step.chunks,
          progress: term,
          monotonicMs: step.monotonicMs,
        })
      : await dispatchLimitedJob(deps, jobs, job, flow, budget, { ...io, chunks: step.chunks });
  noteProgress(step, job.value, sent + failed, failed);
  report.dispatched += sent;
  report.failed += failed;
  if (sent + failed > 0) pass.work = true;
  return { used: sent + failed };
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
