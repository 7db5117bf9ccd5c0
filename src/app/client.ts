import type { AggregateOf, RateLimit, TaskKind } from "../coordination/kinds/taskKinds.js";
import type { JobStatus } from "../coordination/state/jobStatus.js";
import type { Abortable } from "../library/util/delay.js";
import type { LeaderInfo } from "../library/leadership/leaderInfo.js";
import type { CancelResult, SubmitJobOptions, SubmitOptions, SubmitResult } from "./results.js";

/** A job submission: `items` inline or naming blobs in the input container, or a `manifest` blob naming them. */
export interface JobSubmission {
  /** A registered task kind's name. */
  kind: string;
  /** The kind's params (validated by its schema). */
  params?: unknown;
  /** Up to 1,000,000 items: each `{ inline: "text" }` (≤ 40 KiB as JSON) or `{ blob: "<input container blob>" }`. */
  items?: ({ inline: string } | { blob: string })[];
  /** An NDJSON blob in the input container with one item per line; instead of `items`. */
  manifest?: string;
  /** ISO 8601 time (with a zone) after which the leader ends the job as `expired`; at most 7 days ahead. */
  deadline?: string;
  /** The same, in whole seconds from now (1–604800); not with `deadline`. */
  timeoutS?: number;
  /**
   * The job's own limits: its items count against them besides its kind's (`TaskKind.limits`), across every instance.
   * `concurrency`: 1–10,000 items at once; `rate`: `{ limit, periodSeconds, burst? }` starts per period.
   */
  limits?: { concurrency?: number; rate?: RateLimit };
  /** 1 (most urgent) to 9: jobs are dispatched strictly by priority. @default 5 */
  priority?: number;
  /** The tenant (1–128 characters): jobs of equal priority share the dispatch window fairly by it. @default the job */
  fairnessKey?: string;
  /** ISO 8601 time (with a zone) before which none of the job's items starts; ≤ 7 days ahead, before `deadline`. */
  notBefore?: string;
  /** Make the submission once under this key (as `SubmitJobOptions.idempotencyKey`). @default none */
  idempotencyKey?: string;
}

/**
 * Options of a job's read that may name its kind: the status's `aggregate` is then typed by the kind
 * (`JobStatus<AggregateOf<typeof kind>>`), and a job of another kind is refused.
 */
export interface JobReadOptions<Kind extends TaskKind = TaskKind> extends Abortable {
  /** The job's task kind, as registered. @default any kind (the aggregate is `unknown`) */
  kind?: Kind;
}

/** Options of {@link CoordinatorClient.waitForJob}. */
export interface WaitOptions<Kind extends TaskKind = TaskKind> extends JobReadOptions<Kind> {
  /** How often the job's status is read, in ms. @default 1000 */
  pollIntervalMs?: number;
}

/**
 * Talks to a coordinator through its storage: submits, cancels and reads jobs, tells who leads, asks the leader to step
 * down. Any process with access to the coordination storage account can hold one — a function of the same app, a
 * script, another service — and none needs the lease.
 */
export interface CoordinatorClient {
  /**
   * Validates and stores a job, then wakes the coordinator so it starts within about a second. Field errors are a
   * value (`ok: false`), not an exception; so is a conflict of its idempotency key (`conflict`). With
   * `idempotencyKey`, a retry of the same submission answers the first job's id (`replayed: true`).
   */
  submitJob(submission: JobSubmission, options?: SubmitJobOptions): Promise<SubmitResult>;
  /**
   * The job's status, progress, failures and aggregate; undefined for no such job.
   *
   * @throws Error when `options.kind` names another kind than the job's.
   */
  getJob<Kind extends TaskKind = TaskKind>(
    id: string,
    options?: JobReadOptions<Kind>,
  ): Promise<JobStatus<AggregateOf<Kind>> | undefined>;
  /** Requests the job's cancellation: the leader ends it as `cancelled`; workers stop taking its items at once. */
  cancelJob(id: string, options?: SubmitOptions): Promise<CancelResult>;
  /**
   * Reads the job's status until it has ended (completed, failed, cancelled or expired) and returns it.
   *
   * @throws Error when there is no such job, or `options.kind` names another kind than the job's; the signal's reason
   *   when `abortSignal` fires first.
   */
  waitForJob<Kind extends TaskKind = TaskKind>(
    id: string,
    options?: WaitOptions<Kind>,
  ): Promise<JobStatus<AggregateOf<Kind>>>;
  /** Who leads, since when, with which epoch. */
  getLeader(options?: Abortable): Promise<LeaderInfo>;
  /** Asks the current leader to step down; returns the revoked epoch, or undefined when nobody leads. */
  requestStepDown(options?: Abortable): Promise<number | undefined>;
}
