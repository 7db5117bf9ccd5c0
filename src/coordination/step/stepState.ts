import type { FencedStateStore } from "../../library/fencing/FencedStateStore.js";
import type { LeadershipTerm } from "../../library/leadership/Term.js";
import type { CoordinationDeps } from "../deps.js";
import type { ChunkCache } from "../dispatch/chunkCache.js";
import type { UnrecordedCursor } from "../dispatch/recordCursor.js";
import type { MarkerTurn } from "../jobs/markerTurn.js";
import type { FairShare } from "../scheduling/fairShare.js";
import type { JobState } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";

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
  /** Active jobs waiting for their `notBefore` (counted in `activeJobs`), as of the last pass. */
  scheduledJobs: number;
  /** The earliest `notBefore` of those, wall-clock ms; absent when none waits. */
  nextDueAtMs?: number;
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

/** What a step carries from one pass to the next. */
export interface Step {
  deps: CoordinationDeps;
  term: LeadershipTerm;
  options: StepOptions;
  fenced: FencedStateStore;
  jobs: JobStore;
  io: { abortSignal: AbortSignal };
  monotonicMs: () => number;
  /** The monotonic time the budget ends. */
  endMono: number;
  /** Every loop of a pass stops starting new work once the budget is spent (each finishes what it started). */
  pastBudget: () => boolean;
  report: StepReport;
  /** Each job's progress as of the last pass that looked at it (at most MAX_REPORTED_JOBS). */
  progress: Map<string, JobProgress>;
  chunks: ChunkCache;
  /** After a lapsed term, each job's units in flight are sent again once, when this step first reaches the job. */
  redispatched: Set<string>;
  listedAtMs: number | undefined;
  idleMs: number;
  /** Where the next pass starts in the active list: the first job the last pass did not reach (MAX_JOBS_PER_PASS). */
  resumeAt: string | undefined;
  /** The position as the index stores it. */
  storedResumeAt: string | undefined;
  /**
   * Wall-clock ms when the latest results fold began that took every result the queue showed and left none waiting
   * (`FoldReport.drained`): held items may fail only after one that began late enough (`fold/settleHeld.ts`).
   */
  resultsDrainedSinceMs: number | undefined;
  /**
   * Per job, units its dispatch sent that no cursor write recorded (the write failed): recorded before the job is
   * dispatched again in this step, so they are not sent again at every pass (`dispatch/recordCursor.ts`).
   */
  unrecorded: Map<string, UnrecordedCursor>;
  /** Where the step's passes are in the inbox and in the cancellation requests (`jobs/markerTurn.ts`). */
  inboxTurn: MarkerTurn;
  cancelTurn: MarkerTurn;
  /** Who gets the dispatch window next: priorities, fairness keys' deficits and turns, carried from pass to pass. */
  fairShare: FairShare;
}

/** What one pass knows of itself. */
export interface Pass {
  /** Whether this pass lists the inbox and the cancellation requests (at most every LIST_INTERVAL_MS). */
  list: boolean;
  /** Whether it did any work (registered, folded, sent): an idle pass waits before the next. */
  work: boolean;
  /** Jobs whose part of the pass failed, each reported once. */
  failedJobs: Set<string>;
}

/** A job taken off the active list in a pass, with when it ended (its retention starts then). */
export interface EndedJob {
  id: string;
  endedAtMs: number;
}

/** The job as read before this pass's dispatch, plus what the dispatch added (items sent, items failed unsent). */
export function noteProgress(step: Step, job: JobState, dispatched: number, failed: number): void {
  const { progress } = step;
  if (progress.size >= MAX_REPORTED_JOBS && !progress.has(job.id)) return;
  progress.set(job.id, {
    id: job.id,
    total: job.itemCount,
    dispatched: job.dispatched + dispatched,
    done: job.doneCount,
    failed: job.failedCount + failed,
  });
}

/**
 * One job's trouble in a pass (a send storage refuses, a document it cannot read) must not hold up the others; the
 * next pass tries it again. Each job is reported once a pass, whichever parts of the pass failed on it.
 */
export function jobFailed(step: Step, pass: Pass, id: string, error: unknown): void {
  const { deps, term } = step;
  if (pass.failedJobs.has(id)) return;
  pass.failedJobs.add(id);
  step.report.jobErrors++;
  const message = error instanceof Error ? error.message : String(error);
  deps.logger.warn(`Job ${id} could not be worked on in this pass; the other jobs go on: ${message}`, {
    instanceId: deps.instanceId,
    epoch: term.epoch,
  });
  deps.emit({
    type: "job-pass-failed",
    instanceId: deps.instanceId,
    atMs: deps.now(),
    epoch: term.epoch,
    jobId: id,
    error: message,
  });
}
