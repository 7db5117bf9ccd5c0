import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { FencedStateStore, type Versioned } from "../../library/fencing/FencedStateStore.js";
import type { LeadershipTerm } from "../../library/leadership/Term.js";
import { delay, throwIfAborted } from "../../library/util/delay.js";
import { applyCancelRequests } from "../jobs/cancel.js";
import type { CoordinationDeps } from "../deps.js";
import { ChunkCache } from "../dispatch/chunkCache.js";
import { FairShare } from "../scheduling/fairShare.js";
import { foldPoisonBatch } from "../fold/foldPoison.js";
import { awaitAcknowledgements, type FoldReport } from "../fold/foldReport.js";
import { foldResultBatch } from "../fold/foldResultBatch.js";
import type { JobIndex } from "../state/jobState.js";
import { JobStore } from "../state/jobStore.js";
import { registerJobs } from "../jobs/registerJobs.js";
import { recordTerm } from "../state/termHistory.js";
import { workActiveJobs } from "./activeJobs.js";
import { endPass, noteStepEnd } from "./passEnd.js";
import { jobFailed, type Pass, type Step, type StepOptions, type StepReport } from "./stepState.js";

export { MAX_JOBS_PER_PASS } from "./activeJobs.js";
export { MAX_REPORTED_JOBS, type JobProgress, type StepOptions, type StepReport } from "./stepState.js";

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
  const step = await beginStep(deps, term, options);
  for (;;) {
    throwIfAborted(term.signal);
    const pass = beginPass(step);
    await registerNewJobs(step, pass);
    await foldResults(step, pass);
    const index = await readActiveJobs(step);
    await applyCancellations(step, pass, index);
    const finished = await workActiveJobs(step, pass, index);
    if (await endPass(step, pass, index, finished)) {
      await noteStepEnd(deps, step.fenced, term);
      return step.report;
    }
    await waitIfIdle(step, pass);
  }
}

/** The step's start: the term recorded, before any other write; its budget, report and caches. */
async function beginStep(deps: CoordinationDeps, term: LeadershipTerm, options: StepOptions): Promise<Step> {
  const monotonicMs = options.monotonicMs ?? (() => performance.now());
  const endMono = monotonicMs() + options.budgetMs;
  const fenced = new FencedStateStore(deps.state, term);
  const io = { abortSignal: term.signal };
  // First, before any other write: keeps the term history's epoch >= every stored epoch (the next term's floor).
  await recordTerm(fenced, term, deps.logger, io);
  return {
    deps,
    term,
    options,
    fenced,
    jobs: new JobStore(fenced),
    io,
    monotonicMs,
    endMono,
    pastBudget: () => monotonicMs() >= endMono,
    report: {
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
      scheduledJobs: 0,
      jobs: [],
    },
    progress: new Map(),
    chunks: new ChunkCache(deps.chunkCache),
    redispatched: new Set(),
    listedAtMs: undefined,
    idleMs: MIN_IDLE_POLL_MS,
    resumeAt: undefined,
    storedResumeAt: undefined,
    resultsDrainedSinceMs: undefined,
    unrecorded: new Map(),
    inboxTurn: { after: undefined },
    cancelTurn: { after: undefined },
    // A quantum of one unit of any job: every turn sends at least one whole unit.
    fairShare: new FairShare(Math.max(1, deps.workUnitMaxItems)),
  };
}

/** A pass's start: counted, and whether it lists the inbox and the cancellation requests. */
function beginPass(step: Step): Pass {
  step.report.passes++;
  const list = step.listedAtMs === undefined || step.monotonicMs() - step.listedAtMs >= LIST_INTERVAL_MS;
  if (list) step.listedAtMs = step.monotonicMs();
  return { list, work: false, failedJobs: new Set() };
}

/** Phase 1: jobs submitted since the last listing, from the inbox to the active list. */
async function registerNewJobs(step: Step, pass: Pass): Promise<void> {
  const { deps, jobs, term, io, pastBudget } = step;
  const registered = pass.list
    ? await registerJobs(deps, jobs, term.epoch, { ...io, pastBudget, turn: step.inboxTurn })
    : 0;
  step.report.registered += registered;
  if (registered > 0) pass.work = true;
}

/**
 * Phase 2: results in every pass and repeatedly — they free in-flight room for dispatch. Poison once per step (its
 * first pass), and again only while it yields full batches that jobs claim.
 */
async function foldResults(step: Step, pass: Pass): Promise<void> {
  const { deps, jobs, term, io, pastBudget, report } = step;
  for (const fold of report.passes === 1 ? [foldResultBatch, foldPoisonBatch] : [foldResultBatch]) {
    const acknowledgements: FoldReport["acknowledgements"] = [];
    const startedMs = deps.now();
    // Whether every result that reached the queue before `startedMs` has been folded: no batch left any waiting, and
    // the last one took all the queue showed.
    let drained = fold === foldResultBatch;
    let caughtUp = false;
    for (let batch = 0; batch < MAX_FOLD_BATCHES; batch++) {
      // Between batches the event loop runs (renewals, the watchdog), however fast storage answers.
      await yieldToEventLoop();
      const folded = await fold(deps, jobs, term.epoch, { ...io, pastBudget });
      acknowledgements.push(...folded.acknowledgements);
      report.folded += folded.folded;
      report.duplicates += folded.duplicates;
      report.failed += folded.failed;
      report.rejected += folded.rejected;
      report.discarded += folded.discarded;
      report.completedJobs.push(...folded.completed);
      for (const { jobId, error } of folded.jobErrors) jobFailed(step, pass, jobId, error);
      term.reportProgress();
      if (folded.received > 0) pass.work = true;
      drained &&= folded.waiting === 0;
      caughtUp = folded.drained;
      if (!folded.more || pastBudget()) break;
    }
    if (drained && caughtUp) step.resultsDrainedSinceMs = Math.max(step.resultsDrainedSinceMs ?? startedMs, startedMs);
    await awaitAcknowledgements(deps, term.epoch, acknowledgements);
  }
}

/** Phase 3: the job index — the active jobs; the sentinel armed while there are any. */
async function readActiveJobs(step: Step): Promise<Versioned<JobIndex> | undefined> {
  const { term, report } = step;
  const index = await step.jobs.latestIndex(step.io);
  const active = index?.value.active ?? [];
  // Announced when this step registered the jobs: the other instances may all have been idle until now.
  if (active.length > 0) step.options.sentinel?.arm({ abortSignal: term.signal, announce: report.registered > 0 });
  if (report.passes === 1) step.resumeAt = step.storedResumeAt = index?.value.resumeAt;
  return index;
}

/**
 * Phase 4: cancellation requests, applied before dispatch, so a cancelled job gets no more items. A request it cannot
 * apply is logged and emitted there (job-pass-failed), kept for later, and counted here.
 */
async function applyCancellations(step: Step, pass: Pass, index: Versioned<JobIndex> | undefined): Promise<void> {
  const { deps, jobs, io, pastBudget } = step;
  if (pass.list && (index?.value.active.length ?? 0) > 0)
    step.report.jobErrors += (
      await applyCancelRequests(deps, jobs, { ...io, pastBudget, turn: step.cancelTurn })
    ).failed.length;
}

/** Jobs are waiting on workers: an idle pass polls again shortly instead of leaving them until the next tick. */
async function waitIfIdle(step: Step, pass: Pass): Promise<void> {
  const remainingMs = step.endMono - step.monotonicMs();
  if (!pass.work) {
    await delay(Math.min(step.idleMs, remainingMs), { abortSignal: step.term.signal });
    step.idleMs = Math.min(step.idleMs * 2, IDLE_POLL_MS);
  } else step.idleMs = MIN_IDLE_POLL_MS;
}
