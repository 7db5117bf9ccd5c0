/**
 * A leader whose process lacks a job's task kind (a deploy in progress, a kind on some instances only): what it does
 * with the job's results, and how long they wait for a leader that has the kind.
 */
import type { CoordinationDeps } from "../deps.js";
import type { Entry } from "./foldEntries.js";

/**
 * How long a result may wait on the queue for a leader with its job's task kind: 1 hour. A leader lacking the kind
 * (a deploy in progress, a kind on some instances only) leaves results for one that has it; a result still unfolded
 * this long after it was sent is taken as of a kind no deploy has any more, and its items fail with the reason, so the
 * job ends. A rolling deploy takes minutes, and with leadership open to every instance at each tick, a leader with the
 * kind, where any instance has it, comes within the hour all but surely. Measured on the queue's own clock
 * ({@link ReceivedMessage.queuedMs}), not by deliveries: a leader lacking the kind receives and releases the same
 * result in every pass of its step, tens of times a minute, so a count of deliveries says little about time.
 */
export const KIND_WAIT_MS = 60 * 60 * 1000;

/**
 * A leader whose process lacks the job's task kind cannot validate or merge partial results: it records units with
 * failures only and releases the rest (visible again at once) for a leader that has the kind — never failing a valid
 * result (found by the simulator, seeds 1015 and 1098) until it has waited {@link KIND_WAIT_MS} on the queue: then its
 * done items fail too, with the reason. Returns the entries to fold, and those left.
 */
export function leaveForAnotherLeader(
  deps: CoordinationDeps,
  kind: string,
  jobId: string,
  entries: readonly Entry[],
  epoch: number,
): { kept: Entry[]; left: Entry[] } {
  const kept: Entry[] = [];
  const left: Entry[] = [];
  let expired = 0;
  const lacks = `this leader lacks task kind "${kind}" (it has ${deps.registry.names().join(", ") || "none"})`;
  for (const entry of entries) {
    const { done, failed } = entry.outcome;
    if (done.length === 0) kept.push(entry);
    else if ((entry.message.queuedMs ?? 0) < KIND_WAIT_MS) left.push(entry);
    else {
      expired++;
      const reason = `${lacks}, and no leader with it folded the unit's result in the hour since it was sent`;
      kept.push({ ...entry, outcome: { done: [], failed: [...failed, ...done.map((item) => ({ item, reason }))] } });
    }
  }
  const where = { instanceId: deps.instanceId, epoch };
  if (left.length > 0) deps.logger.warn(`Leaving ${left.length} result(s) of job "${jobId}": ${lacks}.`, where);
  if (expired > 0)
    deps.logger.warn(`Failing the items of ${expired} result(s) of job "${jobId}" an hour old: ${lacks}.`, where);
  return { kept, left };
}
