/**
 * What users read about jobs — statuses, progress, field errors of a submission, the outcome of a cancellation — in
 * plain types: the package's public declarations (and so its users' compilers) never see a schema library.
 */

/** A registered job's status: `running`, or one of the final {@link EndedStatus}es. */
export type RunStatus = "running" | EndedStatus;

/**
 * Final statuses: `completed` (every item done or failed), `failed` (the job as a whole could not go on),
 * `cancelled` (on request) and `expired` (its deadline passed).
 */
export type EndedStatus = "completed" | "failed" | "cancelled" | "expired";

/** The statuses after which nothing more happens to a job: {@link EndedStatus}. */
const ENDED_STATUSES: ReadonlySet<string> = new Set<EndedStatus>(["completed", "failed", "cancelled", "expired"]);

/** Whether a job's status is final (completed, failed, cancelled, expired), not `pending`, `scheduled` or `running`. */
export function hasEnded(status: JobStatus["status"]): status is EndedStatus {
  return ENDED_STATUSES.has(status);
}

/**
 * A job's progress as users read it. `Aggregate` is its kind's aggregate as users read it (`AggregateOf<typeof kind>`
 * where the caller names the kind; `unknown` otherwise).
 */
export interface JobStatus<Aggregate = unknown> {
  /** The job's id, as submitted or generated. */
  id: string;
  /** The name of the job's task kind. */
  kind: string;
  /**
   * `pending`: submitted, not yet picked up by a leader. `scheduled`: picked up, waiting for its `notBefore` (as the
   * reader's clock tells; the leader's decides). `completed`: every item done or failed. `failed`: the job could not go
   * on (see `failureReason`). `cancelled` (on request) and `expired` (deadline passed): stopped by the leader early;
   * items neither done nor failed then are `skipped`.
   */
  status: "pending" | "scheduled" | RunStatus;
  /** Why a failed job stopped (e.g. its aggregate would exceed MAX_AGGREGATE_GROUPS). */
  failureReason?: string;
  /**
   * Items in total, sent at least once, done, failed, and skipped (a job stopped early). `held`, while the job runs:
   * items whose failure the leader inferred from a message that named their unit without a usable result (a damaged
   * or forged result, a poisoned copy of the unit) — their reasons are in `failures`; their unit's own result can
   * still make them done, and they count as failed only if none comes by `heldUntil`, when nothing else is left.
   */
  progress: { total: number; dispatched: number; done: number; failed: number; skipped: number; held?: number };
  /**
   * The aggregate so far (final once completed), in the kind's view; undefined while the job is pending, `null` for a
   * kind without an aggregate.
   */
  aggregate: Aggregate | undefined;
  /** Failed items with reasons (the first ones, up to a bound); `progress.failed` counts all. */
  failures: { item: number; reason: string }[];
  /** When the job was submitted (ISO 8601). */
  createdAt: string;
  /** When the job completed with every item done or failed (ISO 8601); undefined before, or when it ended otherwise. */
  completedAt: string | undefined;
  /** When the job completed, was cancelled or expired; absent before. */
  endedAt?: string;
  /** The job's deadline; absent when it has none. */
  deadline?: string;
  /** While items are held (`progress.held`): until when they wait for their unit's own result. */
  heldUntil?: string;
  /** The job's priority, 1 (most urgent) to 9; absent: 5, the default. */
  priority?: number;
  /** The tenant the job shares the dispatch window fairly with; absent: the job is its own. */
  fairnessKey?: string;
  /** When the job may start at the earliest (none of its items is dispatched before); absent: at once. */
  notBefore?: string;
  /** The idempotency key the job was submitted under; absent when it had none. */
  idempotencyKey?: string;
  /** Present while a cancellation is requested and the leader has not applied it yet (pending or running jobs). */
  cancelRequested?: true;
  /** Epoch of the leader that last changed the job. */
  lastEpoch: number | undefined;
  /**
   * Present when this version could read only part of the job, and says why: a pending job whose spec is of a newer
   * format version (a leader of that version registers it) shows only its kind, item count, creation and deadline.
   */
  notice?: string;
}

/** What a cancellation request found. */
export type CancelRequestResult =
  /** The request is stored; the leader applies it at its next step (asking again before then is accepted again). */
  | { outcome: "requested"; id: string }
  | { outcome: "not-found" }
  /** The job had already ended: nothing was stored. */
  | { outcome: "ended"; status: EndedStatus }
  /**
   * The job's state is not one this version reads (a newer version wrote it during a rolling deploy, or it is
   * damaged), so whether it can still be cancelled is unknown: nothing was stored. `reason` names the document and why.
   */
  | { outcome: "unreadable"; reason: string };

/** A field-level problem with a submission. */
export interface FieldError {
  /** Dotted path of the field, e.g. `items.3.inline` or `params.keyField`. */
  field: string;
  /** What is wrong with it and what is allowed. */
  message: string;
}
