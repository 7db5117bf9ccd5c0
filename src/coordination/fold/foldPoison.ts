import { applyOutcomes, readJobOf } from "./applyOutcomes.js";
import type { CoordinationDeps } from "../deps.js";
import { addOutcome, type ByJob, type FoldOptions, type Source } from "./foldEntries.js";
import { emptyReport, type FoldReport } from "./foldReport.js";
import type { JobStore } from "../state/jobStore.js";
import { claimPoison } from "../ports/messages.js";
import { GrantEnds } from "./grantEnds.js";
import type { ReceivedMessage } from "../ports/ports.js";

/**
 * Seconds a received poison message stays invisible. The leader receives poison only when it can claim some of it,
 * and releases at once what it does not claim; this bounds how long a leader that dies in between hides it.
 */
const POISON_VISIBILITY_S = 30;

/** Poison messages looked at, and received, at once (the queue's maximum). */
const POISON_BATCH = 32;

/**
 * Records items that the work poison queue accounts for as failed, with the reason: work messages the host moved
 * there after their retries ran out, and the worker's rejections of messages that named their job and item (see
 * {@link claimPoison}). The queue is peeked first, and received — with a visibility of {@link POISON_VISIBILITY_S} —
 * only when a job can claim something in it (or a full page hides what lies behind). Messages no job claims are
 * released at once, visible as they were to a person peeking at the queue; a message naming items the job does not
 * have, more than a unit of the job holds, or items the job has not sent ({@link unitFailures}) is moved back to the
 * work poison queue with the reason.
 */
export async function foldPoisonBatch(
  deps: CoordinationDeps,
  jobs: JobStore,
  epoch: number,
  options: FoldOptions,
): Promise<FoldReport> {
  const report = emptyReport();
  const queue = deps.workPoisonQueue;
  const peeked = await queue.peek(POISON_BATCH, options);
  const named = new Set(peeked.flatMap((message) => claimPoison(message.text, queue.name)?.jobId ?? []));
  let claimable = false;
  for (const jobId of named) {
    if (claimable) break;
    const read = await readJobOf(jobs, jobId, options);
    if (read.ok) claimable = read.job !== undefined;
    else report.jobErrors.push({ jobId, error: read.error });
  }
  // A full page no job claims is received and released too: it goes behind the rest, so the next step sees past it.
  if (!claimable && peeked.length < POISON_BATCH) return report;

  const messages = await queue.receive(POISON_BATCH, POISON_VISIBILITY_S, options);
  const source: Source = { queue, poison: queue, noJob: "release", rejected: new Set() };
  const byJob: ByJob = new Map();
  const unclaimed: ReceivedMessage[] = [];
  // A poisoned granted unit's copy has ended: its grant is taken back before the message is deleted.
  const ends = new GrantEnds();
  for (const message of messages) {
    const claim = claimPoison(message.text, queue.name);
    if (claim !== undefined) ends.add(message);
    if (claim === undefined) unclaimed.push(message);
    else
      addOutcome(byJob, claim.jobId, {
        outcome: { done: [], failed: [] },
        message,
        unit: { ref: claim, reason: claim.reason },
      });
  }
  await ends.flush(jobs, deps.now(), options);
  unclaimed.push(...(await applyOutcomes(deps, jobs, epoch, byJob, source, report, options)));
  const released = await Promise.allSettled(unclaimed.map((message) => queue.release(message, options)));
  const failed = released.find((result) => result.status === "rejected");
  if (failed !== undefined)
    deps.logger.warn(
      `Releasing unclaimed poison failed (it shows again within ${POISON_VISIBILITY_S} s): ${String(failed.reason)}`,
      { instanceId: deps.instanceId, epoch },
    );
  return {
    ...report,
    received: messages.length - report.left,
    more: messages.length === POISON_BATCH && unclaimed.length === 0 && report.left === 0,
  };
}
