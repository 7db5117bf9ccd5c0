import { Bitmap } from "./bitmap";
import type { CoordinationDeps } from "./deps";
import { MAX_RECORDED_FAILURES, keys, type JobState } from "./jobState";
import type { JobStore } from "./jobStore";
import { parseMessage, resultMessageSchema, workMessageSchema } from "./messages";
import type { MessageQueue, PortOptions, ReceivedMessage } from "./ports";

/** What one fold did. */
export interface FoldReport {
  /** Results folded into aggregates (first delivery). */
  folded: number;
  /** Results for items already counted (duplicates, replays): acknowledged, not counted again. */
  duplicates: number;
  /** Items recorded as failed. */
  failed: number;
  /** Messages that could not be used, moved to the poison queue with a reason. */
  rejected: number;
  /** Ids of jobs that completed in this fold. */
  completed: string[];
  /**
   * Deletes of folded messages still in flight: they start only after the state write, and the caller awaits them
   * with {@link awaitAcknowledgements} while it already receives the next batch. Never rejects.
   */
  acknowledgements: Promise<PromiseSettledResult<void>[]>[];
}

/** Waits for in-flight deletes; throws the first failure. */
export async function awaitAcknowledgements(pending: Promise<PromiseSettledResult<void>[]>[]): Promise<void> {
  const failure = (await Promise.all(pending)).flat().find((result) => result.status === "rejected");
  if (failure !== undefined) throw failure.reason instanceof Error ? failure.reason : new Error(String(failure.reason));
}

/** An outcome for one item, from a result message or the poison queue. */
type Outcome = { item: number; ok: true; partial: unknown } | { item: number; ok: false; reason: string };

/** Receives made at once per fold batch (32 messages each): fewer round trips per result, one state write per job. */
const PARALLEL_RECEIVES = 4;
/** Most messages one fold batch takes. */
export const FOLD_BATCH_SIZE = 32 * PARALLEL_RECEIVES;

/** Seconds a received result stays invisible: long enough to fold and delete, short enough for a new leader to see it soon. */
const RESULT_VISIBILITY_S = 30;
/** Seconds a poison message no one can attribute stays hidden before the leader looks at it again. */
const UNATTRIBUTABLE_VISIBILITY_S = 3600;

/**
 * Folds one batch of worker results into their jobs, exactly once: an item's bit is set in the same conditional write
 * that merges its partial, and messages are deleted only after that write. A crash before the write leaves the
 * messages to reappear; a crash after it makes them duplicates, which the bit rejects.
 */
export async function foldResultBatch(deps: CoordinationDeps, jobs: JobStore, epoch: number, options: PortOptions): Promise<FoldReport & { received: number }> {
  const received = await Promise.all(Array.from({ length: PARALLEL_RECEIVES }, () => deps.resultsQueue.receive(32, RESULT_VISIBILITY_S, options)));
  const messages = received.flat();
  const report = emptyReport();
  const byJob = new Map<string, { outcomes: Outcome[]; messages: ReceivedMessage[] }>();
  for (const message of messages) {
    const parsed = message.text === undefined ? { ok: false as const, reason: "not valid base64" } : parseMessage(resultMessageSchema, message.text);
    if (!parsed.ok) {
      await reject(deps, deps.resultsQueue, deps.resultsPoisonQueue, message, parsed.reason, epoch, options);
      report.rejected++;
      continue;
    }
    const result = parsed.value;
    let outcome: Outcome;
    if (result.ok) {
      const partial = result.partialBlob !== undefined ? await readPartial(deps, result.jobId, result.item, options) : result.partial;
      outcome = { item: result.item, ok: true, partial };
    } else {
      outcome = { item: result.item, ok: false, reason: result.reason };
    }
    const group = byJob.get(result.jobId) ?? { outcomes: [], messages: [] };
    group.outcomes.push(outcome);
    group.messages.push(message);
    byJob.set(result.jobId, group);
  }
  await applyOutcomes(deps, jobs, epoch, byJob, deps.resultsQueue, report, options);
  return { ...report, received: messages.length };
}

/**
 * Records items whose work messages the host moved to the poison queue (retries exhausted, e.g. a worker that
 * crashed on every delivery) as failed. Messages no job can claim stay in the poison queue for a person to inspect.
 */
export async function foldPoisonBatch(deps: CoordinationDeps, jobs: JobStore, epoch: number, options: PortOptions): Promise<FoldReport & { received: number }> {
  const messages = await deps.workPoisonQueue.receive(32, UNATTRIBUTABLE_VISIBILITY_S, options);
  const report = emptyReport();
  const byJob = new Map<string, { outcomes: Outcome[]; messages: ReceivedMessage[] }>();
  for (const message of messages) {
    const parsed = message.text === undefined ? undefined : parseMessage(workMessageSchema, message.text);
    if (parsed === undefined || !parsed.ok) continue; // not attributable: left in place, hidden for an hour
    const { jobId, item } = parsed.value;
    const group = byJob.get(jobId) ?? { outcomes: [], messages: [] };
    group.outcomes.push({ item, ok: false, reason: `retries exhausted: the work message failed ${message.dequeueCount} deliveries and was moved to ${deps.workPoisonQueue.name}` });
    group.messages.push(message);
    byJob.set(jobId, group);
  }
  await applyOutcomes(deps, jobs, epoch, byJob, deps.workPoisonQueue, report, options);
  return { ...report, received: messages.length };
}

async function applyOutcomes(
  deps: CoordinationDeps,
  jobs: JobStore,
  epoch: number,
  byJob: Map<string, { outcomes: Outcome[]; messages: ReceivedMessage[] }>,
  source: MessageQueue,
  report: FoldReport,
  options: PortOptions,
): Promise<void> {
  for (const [jobId, { outcomes, messages }] of byJob) {
    const current = await jobs.readJob(jobId, options);
    if (current === undefined) {
      // A result for no job is rejected with its reason; a poisoned work message for no job stays where it is.
      if (source !== deps.resultsQueue) continue;
      for (const message of messages) await reject(deps, source, deps.resultsPoisonQueue, message, `no job "${jobId}"`, epoch, options);
      report.rejected += messages.length;
      continue;
    }
    // An item the job does not have is bad input, not a duplicate: report it with a reason (found by the chaos suite).
    const { itemCount } = current.value;
    const kept: { outcomes: Outcome[]; messages: ReceivedMessage[] } = { outcomes: [], messages: [] };
    for (const [index, message] of messages.entries()) {
      const outcome = outcomes[index];
      if (outcome === undefined) continue;
      if (outcome.item < itemCount) {
        kept.outcomes.push(outcome);
        kept.messages.push(message);
        continue;
      }
      await reject(deps, source, deps.resultsPoisonQueue, message, `item ${outcome.item} is out of range for job "${jobId}" (items 0–${itemCount - 1})`, epoch, options);
      report.rejected++;
    }
    const next = foldOutcomes(deps, current.value, kept.outcomes, report);
    if (next !== undefined) {
      await jobs.writeJob(next, current, options);
      if (next.status === "completed") report.completed.push(jobId);
    }
    // Only after the write: a crash before it leaves the messages to be delivered again.
    report.acknowledgements.push(Promise.allSettled(kept.messages.map((message) => source.delete(message, options))));
  }
}

/** Pure fold of outcomes into a job state; returns the new state, or undefined when nothing changed. */
export function foldOutcomes(deps: Pick<CoordinationDeps, "registry" | "now">, state: JobState, outcomes: Outcome[], report: FoldReport): JobState | undefined {
  const kind = deps.registry.get(state.kind);
  const done = Bitmap.fromBase64(state.doneBits, state.itemCount);
  const failed = Bitmap.fromBase64(state.failedBits, state.itemCount);
  let aggregate = kind?.partialSchema.parse(state.aggregate);
  const failures = [...state.failures];
  let { doneCount, failedCount } = state;
  const fail = (item: number, reason: string): void => {
    failed.add(item);
    failedCount++;
    report.failed++;
    if (failures.length < MAX_RECORDED_FAILURES) failures.push({ item, reason });
  };
  for (const outcome of outcomes) {
    const { item } = outcome;
    if (item >= state.itemCount || done.has(item) || failed.has(item)) {
      report.duplicates++;
      continue;
    }
    if (!outcome.ok) {
      fail(item, outcome.reason);
      continue;
    }
    const partial = kind?.partialSchema.safeParse(outcome.partial);
    if (kind === undefined || aggregate === undefined || partial === undefined || !partial.success) {
      fail(item, "the worker's partial result is not valid for this task kind");
      continue;
    }
    aggregate = kind.merge(aggregate, partial.data);
    done.add(item);
    doneCount++;
    report.folded++;
  }
  if (doneCount === state.doneCount && failedCount === state.failedCount) return undefined;
  const complete = doneCount + failedCount === state.itemCount;
  return {
    ...state,
    doneBits: done.toBase64(),
    failedBits: failed.toBase64(),
    doneCount,
    failedCount,
    aggregate: aggregate ?? state.aggregate,
    failures,
    status: complete ? "completed" : state.status,
    ...(complete ? { completedAtMs: deps.now() } : {}),
  };
}

async function readPartial(deps: CoordinationDeps, jobId: string, item: number, options: PortOptions): Promise<unknown> {
  const text = await deps.system.readText(keys.partial(jobId, item), options);
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined; // reported as an invalid partial by the fold
  }
}

/** Moves a message the leader cannot use to a poison queue with the reason, logs it, and deletes the original. */
async function reject(deps: CoordinationDeps, source: MessageQueue, poison: MessageQueue, message: ReceivedMessage, reason: string, epoch: number, options: PortOptions): Promise<void> {
  deps.logger.warn(`Rejected message ${message.id} from ${source.name}: ${reason}`, { instanceId: deps.instanceId, epoch });
  deps.emit({ type: "message-rejected", instanceId: deps.instanceId, atMs: deps.now(), epoch, queue: source.name, messageId: message.id, reason });
  await poison.send([JSON.stringify({ rejected: { reason, queue: source.name, messageId: message.id, atMs: deps.now() }, original: message.rawText })], options);
  await source.delete(message, options);
}

function emptyReport(): FoldReport {
  return { folded: 0, duplicates: 0, failed: 0, rejected: 0, completed: [], acknowledgements: [] };
}
