import type { UnitOutcome } from "./foldOutcomes.js";
import type { ItemRef } from "../ports/messages.js";
import type { ResendUnit } from "../flow/resend.js";
import type { MessageQueue, ReceivedMessage } from "../ports/ports.js";
import type { Abortable } from "../../library/util/delay.js";

/** Options of a fold batch ({@link foldResultBatch}, {@link foldPoisonBatch}). */
export interface FoldOptions extends Abortable {
  /**
   * True once the step's budget is spent: the batch folds no more jobs (at least one), and releases the messages of
   * the others, visible again at once for the next step.
   */
  pastBudget?: () => boolean;
}

/**
 * One message's outcome. A message with a `rejection` is one the leader cannot use: after the write it goes to the
 * poison queue with the reason instead of being deleted. A message that names a unit without reporting on it — a
 * rejected result that still names its unit, a work-poison message — has its items as `unit`: they are held with its
 * reason (`state/heldItems.ts`), as far as the job can have sent such a unit (`unitFailures`), after every outcome of
 * the batch that reports on its items.
 */
export interface Entry {
  outcome: UnitOutcome;
  message: ReceivedMessage;
  rejection?: string;
  unit?: { ref: ItemRef; reason: string };
  /** A granted unit whose copy gave its grant back unstarted: to send again, with a new grant. */
  resend?: ResendUnit;
}

/** Outcomes and their messages, by job. */
export type ByJob = Map<string, Entry[]>;

/** Where messages come from, and what happens to those no job can use. */
export interface Source {
  queue: MessageQueue;
  /** Where a message with a reason goes (a bad message; an item out of range). */
  poison: MessageQueue;
  /** Results: a message for no job is rejected to `poison`. Work poison: it is not claimed, and released as it was. */
  noJob: "reject" | "release";
  /** Ids of the messages of this batch sent to `poison` already. */
  rejected: Set<string>;
}

export function addOutcome(byJob: ByJob, jobId: string, entry: Entry): void {
  const entries = byJob.get(jobId) ?? [];
  entries.push(entry);
  byJob.set(jobId, entries);
}
