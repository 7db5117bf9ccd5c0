import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { LeadershipLostError, StaleEpochError } from "../../library/errors.js";
import { FencedStateStore } from "../../library/fencing/FencedStateStore.js";
import type { LeadershipTerm } from "../../library/leadership/Term.js";
import { delay, throwIfAborted } from "../../library/util/delay.js";
import { applyCancelRequests, expireIfDue } from "../jobs/cancel.js";
import type { CoordinationDeps } from "../deps.js";
import { ChunkCache } from "../dispatch/chunkCache.js";
import { dispatchJob } from "../dispatch/dispatch.js";
import { foldPoisonBatch } from "../fold/foldPoison.js";
import { awaitAcknowledgements, type FoldReport } from "../fold/foldReport.js";
import { foldResultBatch } from "../fold/foldResultBatch.js";
import { isStopped, type JobState } from "../state/jobState.js";
import { writeJobStop } from "../state/jobStops.js";
import { JobStore } from "../state/jobStore.js";
import { registerJobs } from "../jobs/registerJobs.js";
import { RETENTION_SWEEP_INTERVAL_MS, noteEnded, removeExpiredJobs, type RetentionOptions } from "../jobs/retention.js";
import { redispatchAfterLapse } from "../dispatch/redispatch.js";
import { recordTerm, recordTermEnd } from "../state/termHistory.js";

/**
 * How long an idle pass waits for workers before looking again, while jobs are active: from the first to the second,
 * doubling with each idle pass and back to the first after a pass with work. Results usually follow work closely, so
 * the first look comes soon; a job whose items take long costs a look every half second.
 */
const MIN_IDLE_POLL_MS = 50;
const IDLE_POLL_MS = 500;
/** Most fold batches of one kind per pass. */
const MAX_FOLD_BATCHES = 20;
/**
 * After its first pass, a step lists the inbox (new jobs) and the cancellation requests at most this often: a pass
 * comes every 50–500 ms while jobs wait on workers, and Azure bills a List Blobs as a write ($5.50 per million), two
 * per pass — most of a small job's blob writes (issue 24). A job submitted or cancelled during a step is seen within
 * this much longer.
 */
export const LIST_INTERVAL_MS = 1000;
/**
 * Most active jobs one pass reads (and may dispatch or end), so that results are folded between them however many jobs
 * are active: each read is a whole job document (at most MAX_JOB_DOCUMENT_BYTES). The next pass, or the next step,
 * goes on from the first job not read (the index's `resumeAt`), so every job gets its turn.
 */
export const MAX_JOBS_PER_PASS = 32;

/** Options for {@link runCoordinationStep}. */
export interface StepOptions {
  /** Time budget of the step; it stops starting new work after this. */
  budgetMs: number;
  /** Monotonic clock. @default performance.now */
  monotonicMs?: () => number;
  /** Most passes the step makes, whatever budget is left (a tool's single pass, a test's). @default no bound */
  maxPasses?: number;
  /**
   * The leader's sentinel (`sentinel.ts`): armed, under the term's signal, once a pass sees an active job — announced
   * when the step has registered a job by then. Whoever ran the step ends it. @default none
   */
  sentinel?: { arm(options: { abortSignal: AbortSignal; announce: boolean }): void };
}

/** What a step did, for the step-completed event and the logs. */
export interface StepReport {
  passes: number;
  registered: number;
  dispatched: number;
  folded: number;
  duplicates: number;
  failed: number;
  rejected: number;
  /** Results and poisoned items of cancelled or expired jobs: acknowledged, not counted. */
  discarded: number;
  /**
   * Jobs whose part of a pass failed — their read, expiry or dispatch, or a fold that could not read their state — each
   * a `job-pass-failed` event, once a pass; the step went on with the others.
   */
  jobErrors: number;
  completedJobs: string[];
  /** Ended jobs whose state and blobs were removed, their retention period over (JOB_RETENTION_HOURS). */
  removedJobs: number;
  /**
   * Items sent again because the term before this one lapsed (`term.previousEnd`): units in flight that a dead
   * process may hold ({@link redispatchInFlight}).
   */
  redispatched: number;
  activeJobs: number;
  /** Progress of each job the step looked at, as of its last pass (at most {@link MAX_REPORTED_JOBS}). */
  jobs: JobProgress[];
}

/** One job's progress in a {@link StepReport}: items in total, sent at least once, done and failed. */
export interface JobProgress {
  id: string;
  total: number;
  dispatched: number;
  done: number;
  failed: number;
}

/** Most jobs a step report lists, so its event stays one small log line (Application Insights keeps 32 KB a trace). */
export const MAX_REPORTED_JOBS = 100;

/**
 * The coordination step, run by the leader under its term: register submitted jobs, fold worker results and poisoned
 * items, dispatch more items (bounded), detect completion. Repeats passes while jobs are active and budget remains;
 * returns when no job is active or the budget is spent. Every state write is fenced by the term's epoch, and the term's
 * signal stops it.
 */
export async function runCoordinationStep(
  deps: CoordinationDeps,
  term: LeadershipTerm,
  options: StepOptions,
): Promise<StepReport> {
  const monotonicMs = options.monotonicMs ?? (() => performance.now());
  const endMono = monotonicMs() + options.budgetMs;
  const fenced = new FencedStateStore(deps.state, term);
  const jobs = new JobStore(fenced);
  const io = { abortSignal: term.signal };
  // First, before any other write: keeps the term history's epoch >= every stored epoch (the next term's floor).
  await recordTerm(fenced, term, deps.logger, io);
  const { epoch } = term;
  const report: StepReport = {
    passes: 0,
    registered: 0,
    dispatched: 0,
    folded: 0,
    duplicates: 0,
    failed: 0,
    rejected: 0,
    discarded: 0,
    jobErrors: 0,
    completedJobs: [],
    removedJobs: 0,
    redispatched: 0,
    activeJobs: 0,
    jobs: [],
  };
  const progress = new Map<string, JobProgress>();
  // The job as read before this pass's dispatch, plus what the dispatch added (items sent, items failed unsent).
  const noteProgress = (job: JobState, dispatched: number, failed: number): void => {
    if (progress.size >= MAX_REPORTED_JOBS && !progress.has(job.id)) return;
    progress.set(job.id, {
      id: job.id,
      total: job.itemCount,
      dispatched: job.dispatched + dispatched,
      done: job.doneCount,
      failed: job.failedCount + failed,
    });
  };
  let idleMs = MIN_IDLE_POLL_MS;
  let listedAtMs: number | undefined;
  const chunks = new ChunkCache();
  // Every loop of a pass stops starting new work once the budget is spent (each finishes what it started).
  const pastBudget = (): boolean => monotonicMs() >= endMono;
  // Where the next pass starts in the active list: the first job the last pass did not reach (see MAX_JOBS_PER_PASS).
  let resumeAt: string | undefined;
  let storedResumeAt: string | undefined;
  // After a lapsed term, each job's units in flight are sent again once, when this step first reaches the job.
  const redispatched = new Set<string>();
  for (;;) {
    throwIfAborted(term.signal);
    report.passes++;
    // One job's trouble (a send storage refuses, a document it cannot read) must not hold up the others; the next pass
    // tries it again. Each job is reported once a pass, whichever parts of the pass failed on it.
    const failedJobs = new Set<string>();
    const jobFailed = (id: string, error: unknown): void => {
      if (failedJobs.has(id)) return;
      failedJobs.add(id);
      report.jobErrors++;
      const message = error instanceof Error ? error.message : String(error);
      deps.logger.warn(`Job ${id} could not be worked on in this pass; the other jobs go on: ${message}`, {
        instanceId: deps.instanceId,
        epoch,
      });
      deps.emit({
        type: "job-pass-failed",
        instanceId: deps.instanceId,
        atMs: deps.now(),
        epoch,
        jobId: id,
        error: message,
      });
    };
    const list = listedAtMs === undefined || monotonicMs() - listedAtMs >= LIST_INTERVAL_MS;
    if (list) listedAtMs = monotonicMs();
    const registered = list ? await registerJobs(deps, jobs, epoch, { ...io, pastBudget }) : 0;
    report.registered += registered;
    let work = registered > 0;
    // Results in every pass and repeatedly: they free in-flight room for dispatch. Poison once per step (its first
    // pass), and again only while it yields full batches that jobs claim.
    for (const fold of report.passes === 1 ? [foldResultBatch, foldPoisonBatch] : [foldResultBatch]) {
      const acknowledgements: FoldReport["acknowledgements"] = [];
      for (let batch = 0; batch < MAX_FOLD_BATCHES; batch++) {
        // Between batches the event loop runs (renewals, the watchdog), however fast storage answers.
        await yieldToEventLoop();
        const folded = await fold(deps, jobs, epoch, { ...io, pastBudget });
        acknowledgements.push(...folded.acknowledgements);
        report.folded += folded.folded;
        report.duplicates += folded.duplicates;
        report.failed += folded.failed;
        report.rejected += folded.rejected;
        report.discarded += folded.discarded;
        report.completedJobs.push(...folded.completed);
        for (const { jobId, error } of folded.jobErrors) jobFailed(jobId, error);
        term.reportProgress();
        if (folded.received > 0) work = true;
        if (!folded.more || pastBudget()) break;
      }
      await awaitAcknowledgements(deps, epoch, acknowledgements);
    }
    const index = await jobs.readIndex(io);
    const active = index?.value.active ?? [];
    // Announced when this step registered the jobs: the other instances may all have been idle until now.
    if (active.length > 0) options.sentinel?.arm({ abortSignal: term.signal, announce: report.registered > 0 });
    if (report.passes === 1) resumeAt = storedResumeAt = index?.value.resumeAt;
    // Jobs taken off the active list in this pass, with when they ended (their retention starts then).
    const finished: { id: string; endedAtMs: number }[] = [];
    let budget = deps.dispatchBatchSize;
    // Cancellation requests are applied before dispatch, so a cancelled job gets no more items.
    // A request it cannot apply is logged and emitted there (job-pass-failed), kept for later, and counted here.
    if (list && active.length > 0)
      report.jobErrors += (await applyCancelRequests(deps, jobs, { ...io, pastBudget })).failed.length;
    // From where the last pass stopped, round the list, while the budget lasts and at most MAX_JOBS_PER_PASS jobs.
    const start = resumeAt === undefined ? 0 : Math.max(0, active.indexOf(resumeAt));
    const order = [...active.slice(start), ...active.slice(0, start)];
    resumeAt = undefined;
    for (const [visited, id] of order.entries()) {
      if (visited > 0 && (visited >= MAX_JOBS_PER_PASS || pastBudget())) {
        resumeAt = id;
        break;
      }
      try {
        const read = await jobs.readJob(id, io);
        const job = read === undefined ? undefined : await expireIfDue(deps, jobs, read, io);
        if (job === undefined || job.value.status !== "running") {
          // Workers stop taking its items (a cancellation request wrote this already; an expiry or a failure has not).
          if (job !== undefined && job.value.status !== "completed") await writeJobStop(deps.system, id, io);
          finished.push({ id, endedAtMs: job?.value.completedAtMs ?? job?.value.endedAtMs ?? deps.now() });
          if (job !== undefined) {
            noteProgress(job.value, 0, 0);
            emitJobEnded(deps, epoch, job.value);
          }
          continue;
        }
        let current = job;
        if (term.previousEnd === "lapsed" && !redispatched.has(id)) {
          const again = await redispatchAfterLapse(deps, jobs, job, { ...io, chunks });
          // Once it has succeeded: a pass that failed on the job tries again.
          redispatched.add(id);
          current = again.job;
          if (again.units > 0) {
            report.redispatched += again.items;
            work = true;
            deps.logger.info(
              `Job ${id}: sent again ${again.items} items in ${again.units} units that were in flight when the last term lapsed.`,
              { instanceId: deps.instanceId, epoch },
            );
          }
        }
        const { sent, failed } = await dispatchJob(deps, jobs, current, budget, {
          ...io,
          chunks,
          progress: term,
          monotonicMs,
        });
        noteProgress(job.value, sent + failed, failed);
        budget -= sent + failed;
        report.dispatched += sent;
        report.failed += failed;
        if (sent + failed > 0) work = true;
      } catch (error) {
        // Losing leadership, or a newer leader's write, ends the step.
        if (term.signal.aborted || error instanceof StaleEpochError || error instanceof LeadershipLostError)
          throw error;
        jobFailed(id, error);
      }
      term.reportProgress();
    }
    report.activeJobs = active.length - finished.length;
    report.jobs = [...progress.values()];
    const ending =
      pastBudget() || (!work && report.activeJobs === 0) || report.passes >= (options.maxPasses ?? Infinity);
    // Each ended job's retention marker first: a crash before the index write leaves the job active, and the next
    // pass writes the same marker again.
    await Promise.all(finished.map(({ id, endedAtMs }) => noteEnded(deps, id, endedAtMs, io)));
    // The position is written with the index's other changes, or once at the end of a step that did not reach every
    // job: at most one small write per step for it.
    if (finished.length > 0 || (ending && resumeAt !== storedResumeAt)) {
      await jobs.updateIndex({ remove: finished.map(({ id }) => id), resumeAt: resumeAt ?? null }, io);
      storedResumeAt = resumeAt;
    }
    // Once an hour (and in every step while one is unfinished), ended jobs past their retention are removed — after
    // the pass has recorded the jobs that ended, and never holding up the step (`sweepRetention`).
    if (report.passes === 1 && deps.now() - (index?.value.sweptAtMs ?? 0) >= RETENTION_SWEEP_INTERVAL_MS)
      report.removedJobs += await sweepRetention(deps, jobs, { ...io, pastBudget });
    if (ending) {
      await noteStepEnd(deps, fenced, term);
      return report;
    }
    const remainingMs = endMono - monotonicMs();
    // Jobs are waiting on workers: poll again shortly instead of leaving them until the next tick.
    if (!work) {
      await delay(Math.min(idleMs, remainingMs), { abortSignal: term.signal });
      idleMs = Math.min(idleMs * 2, IDLE_POLL_MS);
    } else idleMs = MIN_IDLE_POLL_MS;
  }
}

/**
 * Removes the ended jobs past their retention (`retention.ts`: one job's trouble is reported and put off there) and,
 * when nothing due is left, records the sweep in the index (one small write an hour). Any other failure — a listing,
 * the index — is logged and the step goes on: the next step sweeps again. Only an abort, a lost term or a newer
 * leader's write is thrown. Returns the jobs removed.
 */
async function sweepRetention(deps: CoordinationDeps, jobs: JobStore, options: RetentionOptions): Promise<number> {
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
async function noteStepEnd(deps: CoordinationDeps, fenced: FencedStateStore, term: LeadershipTerm): Promise<void> {
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
