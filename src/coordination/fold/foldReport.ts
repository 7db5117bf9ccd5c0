import type { CoordinationDeps } from "../deps.js";

/** Counts of what folding did. */
export interface FoldCounts {
  /** Results folded into aggregates (first delivery). */
  folded: number;
  /** Results for items already counted (duplicates, replays) or for a job that has ended: acknowledged, not counted. */
  duplicates: number;
  /** Items recorded as failed. */
  failed: number;
}

/** What one fold did. */
export interface FoldReport extends FoldCounts {
  /** Messages that could not be used, moved to a poison queue with a reason. */
  rejected: number;
  /** Results and poisoned items of cancelled or expired jobs: acknowledged without counting. */
  discarded: number;
  /** Ids of jobs that completed in this fold. */
  completed: string[];
  /**
   * Deletes of folded messages still in flight: they start only after the state write, and the caller awaits them
   * with {@link awaitAcknowledgements} while it already receives the next batch. Never rejects.
   */
  acknowledgements: Promise<PromiseSettledResult<boolean>[]>[];
  /** Messages taken off the queue (received), less those left (see {@link left}). */
  received: number;
  /**
   * Messages released, visible again at once: results for a leader that has the job's task kind (this process lacks
   * it), and results and poison of a job whose state could not be read (see {@link jobErrors}).
   */
  left: number;
  /**
   * Of {@link left}, the messages released for another leader (a task kind this one lacks, a newer version) or for the
   * next step (its budget spent): results still to be folded. Not those of a job whose state could not be read.
   */
  waiting: number;
  /**
   * Jobs whose state could not be read or parsed, with the error: their messages were left for a later pass, and the
   * step reports them (`job-pass-failed`). Such an error is the job's, never a message's.
   */
  jobErrors: { jobId: string; error: unknown }[];
  /**
   * Whether the queue may hold more to fold at once: the batch was full (and, for poison, every message was claimed).
   */
  more: boolean;
  /**
   * Results only: whether this batch took every result visible when it received (a receive came back short) and
   * folded them all, none {@link waiting}. Held items may be failed only after such a batch (`settleHeld.ts`).
   */
  drained: boolean;
}

/**
 * Waits for in-flight deletes and logs the failed ones. A folded message whose delete failed is not lost work: its
 * item is counted already, and when it comes back it is acknowledged as a duplicate — so a failed delete (or one
 * storage answers `404` or `400 PopReceiptMismatch`) is no reason to fail the step.
 */
export async function awaitAcknowledgements(
  deps: Pick<CoordinationDeps, "logger" | "instanceId">,
  epoch: number,
  pending: Promise<PromiseSettledResult<boolean>[]>[],
): Promise<void> {
  const results = (await Promise.all(pending)).flat();
  const failures = results.filter((result) => result.status === "rejected");
  const gone = results.filter((result) => result.status === "fulfilled" && !result.value).length;
  if (failures.length > 0) {
    const reason: unknown = failures[0]?.reason;
    deps.logger.warn(
      `${failures.length} folded message(s) could not be deleted (${reason instanceof Error ? reason.message : String(reason)}); they will come back and count as duplicates.`,
      { instanceId: deps.instanceId, epoch },
    );
  }
  if (gone > 0)
    deps.logger.verbose(
      `${gone} folded message(s) were no longer ours to delete (received again after their visibility timeout); they will count as duplicates.`,
      { instanceId: deps.instanceId, epoch },
    );
}

/** Adds what one fold did to another's report. */
export function addReport(report: FoldReport, more: FoldReport): void {
  report.folded += more.folded;
  report.duplicates += more.duplicates;
  report.failed += more.failed;
  report.rejected += more.rejected;
  report.discarded += more.discarded;
  report.left += more.left;
  report.waiting += more.waiting;
  report.jobErrors.push(...more.jobErrors);
  report.completed.push(...more.completed);
  report.acknowledgements.push(...more.acknowledgements);
}

export function emptyCounts(): FoldCounts {
  return { folded: 0, duplicates: 0, failed: 0 };
}

export function emptyReport(): FoldReport {
  return {
    ...emptyCounts(),
    rejected: 0,
    discarded: 0,
    completed: [],
    acknowledgements: [],
    received: 0,
    left: 0,
    waiting: 0,
    jobErrors: [],
    more: false,
    drained: false,
  };
}
