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

/** Whether a request's wake-up was sent ("off" when not asked for), and why not. */
export interface WakeUpReport {
  /** "sent": the leader was woken; "failed": it could not be (it runs the job at its next tick); "off": not asked. */
  wakeUp: "sent" | "failed" | "off";
  /** Why the wake-up failed; only with `wakeUp: "failed"`. */
  wakeUpError?: string;
}

/** A submission's outcome: the job, and whether the wake-up was sent. */
export type SubmitResult =
  ({ ok: true; id: string; itemCount: number } & WakeUpReport) | { ok: false; errors: FieldError[] };

/** A cancellation request's outcome; a stored request also says whether its wake-up was sent. */
export type CancelResult =
  | Exclude<CancelRequestResult, { outcome: "requested" }>
  | (Extract<CancelRequestResult, { outcome: "requested" }> & WakeUpReport);
