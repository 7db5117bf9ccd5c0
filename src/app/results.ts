import type { CancelRequestResult, FieldError } from "../coordination/state/jobStatus.js";
import type { Abortable } from "../library/util/delay.js";

/** What submitting and cancelling answer (plain types: part of the package's public declarations). */

/** Options of submitting and cancelling a job. */
export interface SubmitOptions extends Abortable {
  /**
   * Send a wake-up so the coordinator acts now (starts the job, applies the cancellation), not at its next tick.
   * @default true
   */
  wake?: boolean;
}

/** Options of submitting a job. */
export interface SubmitJobOptions extends SubmitOptions {
  /**
   * Make the submission once: a retry with the same key and the same submission answers the first job's id
   * (`replayed: true`) and stores nothing more; the same key with another submission is refused (`conflict`). 1–200
   * printable ASCII characters (a UUID, say). The same as the submission's `idempotencyKey` field (both given must be
   * equal). A key is remembered as long as its job is kept (JOB_RETENTION_HOURS after it ended). @default none
   */
  idempotencyKey?: string;
}

/** Whether a request's wake-up was sent ("off" when not asked for, or nothing new was stored), and why not. */
export interface WakeUpReport {
  /** "sent": the leader was woken; "failed": it could not be (it runs the job at its next tick); "off": not asked. */
  wakeUp: "sent" | "failed" | "off";
  /** Why the wake-up failed; only with `wakeUp: "failed"`. */
  wakeUpError?: string;
}

/**
 * A submission's outcome: the job, and whether the wake-up was sent; or the field errors. `replayed`: the submission
 * was made before under its idempotency key, and `id` is that first job's. `conflict`: the idempotency key was used
 * for another submission (the job named, when known), and nothing was stored.
 */
export type SubmitResult =
  | ({ ok: true; id: string; itemCount: number; replayed?: true } & WakeUpReport)
  | { ok: false; errors: FieldError[]; conflict?: { jobId: string | undefined } };

/** A cancellation request's outcome; a stored request also says whether its wake-up was sent. */
export type CancelResult =
  | Exclude<CancelRequestResult, { outcome: "requested" }>
  | (Extract<CancelRequestResult, { outcome: "requested" }> & WakeUpReport);
