import { Bitmap } from "./bitmap";
import type { CoordinationDeps } from "./deps";
import { MAX_RECORDED_FAILURES, isStopped, keys, type JobState } from "./jobState";
import type { JobStore } from "./jobStore";
import type { Versioned } from "../library/fencing/FencedStateStore";
import type { z } from "zod";
import {
  claimPoison,
  fromRanges,
  MAX_OUTCOME_BYTES,
  outcomeTooLarge,
  parseMessage,
  resultMessageSchema,
  unitOutcomeSchema,
  resultUnitOf,
  newerResultOf,
  RESULT_VERSION,
  type ItemRanges,
  type ItemRef,
  type unitResultMessageSchema,
} from "./messages";
import type { MessageQueue, OpenedBlob, ReceivedMessage } from "./ports";
import { MAX_REJECTION_REASON_LENGTH, rejectionReason, rejectionText } from "./rejection";
import { jsonByteLength } from "./jsonSize";
import { mergeAll } from "./taskRegistry";
import {
  AbortError,
  ConcurrentUpdateError,
  LeadershipLostError,
  StaleEpochError,
  StorageError,
} from "../library/errors";
import type { Abortable } from "../library/util/delay";

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
   * Jobs whose state could not be read or parsed, with the error: their messages were left for a later pass, and the
   * step reports them (`job-pass-failed`). Such an error is the job's, never a message's.
   */
  jobErrors: { jobId: string; error: unknown }[];
  /**
   * Whether the queue may hold more to fold at once: the batch was full (and, for poison, every message was claimed).
   */
  more: boolean;
}

/** Options of a fold batch ({@link foldResultBatch}, {@link foldPoisonBatch}). */
export interface FoldOptions extends Abortable {
  /**
   * True once the step's budget is spent: the batch folds no more jobs (at least one), and releases the messages of
   * the others, visible again at once for the next step.
   */
  pastBudget?: () => boolean;
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

/** An outcome for one item, from a v1 result message. */
export type ItemOutcome = { item: number; ok: true; partial: unknown } | { item: number; ok: false; reason: string };

/**
 * The outcome of a unit of items, from a result message, the poison queue or dispatch: the items done, with their
 * partials merged into one, and the failed items with reasons.
 */
export interface UnitOutcome {
  done: number[];
  partial?: unknown;
  failed: { item: number; reason: string }[];
}

/** What the fold takes: unit outcomes, or item outcomes (results of leaders before work units). */
export type Outcome = UnitOutcome | ItemOutcome;

/** A unit outcome for any outcome. */
function asUnit(outcome: Outcome): UnitOutcome {
  if (!("item" in outcome)) return outcome;
  return outcome.ok
    ? { done: [outcome.item], partial: outcome.partial, failed: [] }
    : { done: [], failed: [{ item: outcome.item, reason: outcome.reason }] };
}

/** The highest item an outcome names (-1 for none). */
function lastItem(outcome: UnitOutcome): number {
  return Math.max(-1, ...outcome.done.slice(-1), ...outcome.failed.map((failure) => failure.item));
}

/**
 * One message's outcome. A message with a `rejection` is one the leader cannot use: after the write it goes to the
 * poison queue with the reason instead of being deleted. A message that names a unit without reporting on it — a
 * rejected result that still names its unit, a work-poison message — has its items as `unit`: they fail with its
 * reason, as far as the job can have sent such a unit ({@link unitFailures}), after every outcome of the batch that
 * reports on its items.
 */
interface Entry {
  outcome: UnitOutcome;
  message: ReceivedMessage;
  rejection?: string;
  unit?: { ref: ItemRef; reason: string };
}

/** Outcomes and their messages, by job. */
type ByJob = Map<string, Entry[]>;

/** Where messages come from, and what happens to those no job can use. */
interface Source {
  queue: MessageQueue;
  /** Where a message with a reason goes (a bad message; an item out of range). */
  poison: MessageQueue;
  /** Results: a message for no job is rejected to `poison`. Work poison: it is not claimed, and released as it was. */
  noJob: "reject" | "release";
  /** Ids of the messages of this batch sent to `poison` already. */
  rejected: Set<string>;
}

/** Receives made at once per fold batch (32 messages each): fewer round trips per result, one state write per job. */
const PARALLEL_RECEIVES = 4;
/** Most messages one fold batch takes. */
export const FOLD_BATCH_SIZE = 32 * PARALLEL_RECEIVES;

/**
 * Seconds a received result stays invisible: long enough to fold and delete, short enough for a new leader to see it
 * soon.
 */
const RESULT_VISIBILITY_S = 30;
/**
 * Seconds a received poison message stays invisible. The leader receives poison only when it can claim some of it,
 * and releases at once what it does not claim; this bounds how long a leader that dies in between hides it.
 */
const POISON_VISIBILITY_S = 30;
/** Poison messages looked at, and received, at once (the queue's maximum). */
const POISON_BATCH = 32;
/**
 * Deliveries of a result after which the leader, failing on it once more, rejects it with the error as its reason: 10.
 * The results queue has no delivery limit, so without one a result the leader cannot fold (a kind whose `merge`
 * throws on it, a job write storage refuses) would fail a step every 30 s for ever, and hold up every result received
 * with it. Each failed step hides it for {@link RESULT_VISIBILITY_S}, so that is 4.5 minutes of failing steps at
 * least; and an error that says storage did not answer, or answered 5xx, is never blamed on a message.
 */
export const MAX_RESULT_DELIVERIES = 10;

/**
 * Folds one batch of worker results into their jobs, exactly once: an item's bit is set in the same conditional write
 * that merges its partial, and messages are deleted only after that write. A crash before the write leaves the
 * messages to reappear; a crash after it makes them duplicates, which the bit rejects. When the batch fails on an
 * error that may be a message's doing and one of its messages has come back {@link MAX_RESULT_DELIVERIES} times, the
 * batch is folded again a message at a time ({@link foldEachAlone}).
 */
export async function foldResultBatch(
  deps: CoordinationDeps,
  jobs: JobStore,
  epoch: number,
  options: FoldOptions,
): Promise<FoldReport> {
  const received = await Promise.all(
    Array.from({ length: PARALLEL_RECEIVES }, () => deps.resultsQueue.receive(32, RESULT_VISIBILITY_S, options)),
  );
  const messages = received.flat();
  const source: Source = {
    queue: deps.resultsQueue,
    poison: deps.resultsPoisonQueue,
    noJob: "reject",
    rejected: new Set(),
  };
  const batch: Batch = { deps, jobs, epoch, source, options };
  let report: FoldReport;
  try {
    report = await foldResults(batch, messages);
  } catch (error) {
    const last = messages.some((message) => message.dequeueCount >= MAX_RESULT_DELIVERIES);
    if (!last || !blamesTheMessage(error, options)) throw error;
    report = await foldEachAlone(batch, messages);
  }
  // Results left for another leader are not work for this one: it must not spin on them (and keep the lease) all step.
  return {
    ...report,
    received: messages.length - report.left,
    more: messages.length === FOLD_BATCH_SIZE && report.left === 0,
  };
}

/** What folding a batch of results works with. */
interface Batch {
  deps: CoordinationDeps;
  jobs: JobStore;
  epoch: number;
  source: Source;
  options: FoldOptions;
}

/**
 * Most bytes of outcomes — result messages' text and the outcome blobs they name — whose partials one state write per
 * job folds, 8 MiB: results holding more are folded in rounds, one write per job each, so that the partials a fold
 * holds at once stay bounded (16 MiB of group-by JSON takes some 60 MB of heap parsed) however many large results a
 * batch receives. A blob's size is known before it is read; an outcome larger than this goes alone in its round.
 */
export const FOLD_ROUND_BYTES = 8 * 1024 * 1024;

/**
 * An outcome blob's text (undefined when it does not exist); or why it was not read: it is larger than
 * {@link MAX_OUTCOME_BYTES} (found before reading it, or while), or storage refused the request for what it asked (a
 * 4xx other than 401, 403, 408 and 429: {@link refusedForTheRequest}).
 */
type OutcomeText = { text: string | undefined } | { tooLarge: string } | { refused: string };

/** Reads an outcome blob (system container) for a fold. */
type OutcomeReader = (name: string) => Promise<OutcomeText>;

/**
 * Folds result messages: one state write per job and round. Outcomes are read in the order received, into a round
 * of at most {@link FOLD_ROUND_BYTES} (or one outcome); a round that would pass it is folded first. The failures of
 * units named by messages the leader cannot use come last, after every outcome that reports on its items.
 */
async function foldResults(batch: Batch, messages: readonly ReceivedMessage[]): Promise<FoldReport> {
  const { deps, jobs, epoch, source, options } = batch;
  const report = emptyReport();
  let round: { byJob: ByJob; bytes: number } = { byJob: new Map(), bytes: 0 };
  const named: ByJob = new Map();
  const fits = (bytes: number): boolean => round.bytes === 0 || round.bytes + bytes <= FOLD_ROUND_BYTES;
  const foldRound = async (): Promise<void> => {
    const full = round.byJob;
    round = { byJob: new Map(), bytes: 0 };
    await applyOutcomes(deps, jobs, epoch, full, source, report, options);
  };
  // A refused read is the message's doing (it named the blob); an error folding the round before is not.
  const refused = async <T>(read: () => Promise<T>): Promise<T | { refused: string }> => {
    try {
      return await read();
    } catch (error) {
      if (!refusedForTheRequest(error)) throw error;
      return { refused: error.message };
    }
  };
  const open = (name: string): Promise<OpenedBlob | undefined | { refused: string }> =>
    refused(() => deps.system.open(name, options));
  const readOutcome: OutcomeReader = async (name) => {
    let opened = await open(name);
    const size = opened === undefined || "refused" in opened ? 0 : opened.sizeBytes;
    if (opened !== undefined && !("refused" in opened) && size <= MAX_OUTCOME_BYTES && !fits(size)) {
      // The round before it is folded first; the blob is not held open meanwhile, but opened again after.
      opened.close();
      await foldRound();
      opened = await open(name);
    }
    if (opened === undefined) return { text: undefined };
    if ("refused" in opened) return opened;
    if (opened.sizeBytes > MAX_OUTCOME_BYTES) {
      opened.close();
      return { tooLarge: outcomeTooLarge(opened.sizeBytes) };
    }
    const blob = opened;
    const read = await refused(() => readBounded(blob, MAX_OUTCOME_BYTES));
    if ("refused" in read) return read;
    round.bytes += read.bytes;
    return read.text === undefined ? { tooLarge: outcomeTooLarge(MAX_OUTCOME_BYTES, true) } : { text: read.text };
  };
  const newer: { message: ReceivedMessage; version: number }[] = [];
  for (const message of messages) {
    const bytes = Buffer.byteLength(message.text ?? message.rawText);
    if (!fits(bytes)) await foldRound();
    round.bytes += bytes;
    const read = await resultOf(message, readOutcome);
    if (read.ok === "newer") newer.push({ message, version: read.version });
    else if (read.ok) addOutcome(round.byJob, read.jobId, { outcome: read.outcome, message });
    else if (read.unit !== undefined) addOutcome(named, read.unit.jobId, rejectedUnit(read.unit, message, read.reason));
    else {
      await reject(deps, source, message, read.reason, epoch, options);
      report.rejected++;
    }
  }
  if (newer.length > 0) {
    const versions = [...new Set(newer.map(({ version }) => version))].join(", ");
    deps.logger.warn(
      `Leaving ${newer.length} result(s) of format version ${versions} for a newer leader (this one reads up to ${RESULT_VERSION}).`,
      { instanceId: deps.instanceId, epoch },
    );
    await Promise.allSettled(newer.map(({ message }) => source.queue.release(message, options)));
    report.left += newer.length;
  }
  for (const [jobId, entries] of named) for (const entry of entries) addOutcome(round.byJob, jobId, entry);
  await applyOutcomes(deps, jobs, epoch, round.byJob, source, report, options);
  return report;
}

/**
 * An opened blob's text, read to its end, or undefined when it has more than `maxBytes` (its size said less: read no
 * further); `bytes`, what was read.
 */
async function readBounded(opened: OpenedBlob, maxBytes: number): Promise<{ text?: string; bytes: number }> {
  const pieces: Uint8Array[] = [];
  let bytes = 0;
  try {
    for await (const piece of opened.content) {
      bytes += piece.byteLength;
      if (bytes > maxBytes) return { bytes };
      pieces.push(piece);
    }
  } finally {
    opened.close();
  }
  return { text: Buffer.concat(pieces).toString("utf8"), bytes };
}

/**
 * Folds a batch that failed again, a message at a time, so that the message it failed on is found: one that fails
 * alone on its {@link MAX_RESULT_DELIVERIES}th delivery or later is rejected with the error as reason, its unit's items
 * failed with it when the job can still take them. One that fails alone sooner is left for its next delivery (hidden
 * for {@link RESULT_VISIBILITY_S}), and the step then fails with its error, as before. Messages this batch rejected
 * already are not looked at again; those it folded already come out as duplicates.
 */
async function foldEachAlone(batch: Batch, messages: readonly ReceivedMessage[]): Promise<FoldReport> {
  const report = emptyReport();
  let deferred: { error: unknown } | undefined;
  for (const message of messages) {
    if (batch.source.rejected.has(message.id)) continue;
    try {
      addReport(report, await foldResults(batch, [message]));
    } catch (error) {
      if (!blamesTheMessage(error, batch.options)) throw error;
      if (message.dequeueCount < MAX_RESULT_DELIVERIES) deferred ??= { error };
      else {
        const reason = `the leader failed on it ${message.dequeueCount} times, the last with: ${String(error)}`;
        addReport(report, await rejectFailing(batch, message, reason));
      }
    }
  }
  if (deferred !== undefined) throw deferred.error;
  return report;
}

/**
 * Rejects a result the leader keeps failing on, with the reason: its unit's items fail with it first when it names
 * one and that write succeeds; otherwise (it names none, or the write fails too on something of its own) it is only
 * rejected, so that it can fail no more steps.
 */
async function rejectFailing(batch: Batch, message: ReceivedMessage, reason: string): Promise<FoldReport> {
  const { deps, jobs, epoch, source, options } = batch;
  const report = emptyReport();
  const unit = message.text === undefined ? undefined : resultUnitOf(message.text);
  if (unit !== undefined)
    try {
      const byJob: ByJob = new Map([[unit.jobId, [rejectedUnit(unit, message, reason)]]]);
      await applyOutcomes(deps, jobs, epoch, byJob, source, report, options);
      return report;
    } catch (error) {
      if (!blamesTheMessage(error, options)) throw error;
    }
  if (!source.rejected.has(message.id)) {
    await reject(deps, source, message, reason, epoch, options);
    report.rejected++;
  }
  return report;
}

/**
 * Whether an error on a message may be the message's doing: not the leader's own end (the step aborted, the term lost
 * or fenced), not a race with another writer, and not storage that did not answer, answered 5xx, or refused the app
 * (401, 403) or its pace (408, 429).
 */
function blamesTheMessage(error: unknown, options: Abortable): boolean {
  if (endsTheStep(error, options)) return false;
  if (error instanceof StorageError) return refusedForTheRequest(error);
  return !(error instanceof ConcurrentUpdateError);
}

/** Whether an error is the leader's own end — the step aborted, the term lost or fenced —, which ends the step. */
function endsTheStep(error: unknown, options: Abortable): boolean {
  return (
    options.abortSignal?.aborted === true ||
    error instanceof AbortError ||
    error instanceof LeadershipLostError ||
    error instanceof StaleEpochError
  );
}

/**
 * A job's state, or the error reading or parsing it (damaged, or of a shape a newer version wrote): the job's
 * trouble, never its messages', and no reason to stop folding the other jobs. The leader's own end still throws.
 */
async function readJobOf(
  jobs: JobStore,
  jobId: string,
  options: Abortable,
): Promise<{ ok: true; job: Versioned<JobState> | undefined } | { ok: false; error: unknown }> {
  try {
    return { ok: true, job: await jobs.readJob(jobId, options) };
  } catch (error) {
    if (endsTheStep(error, options)) throw error;
    return { ok: false, error };
  }
}

/**
 * Leaves the messages of a job whose state cannot be read for a later pass — released, visible again at once, never
 * rejected or failed — and records the job's error for the step to report.
 */
function leaveUnreadable(
  jobId: string,
  error: unknown,
  entries: readonly Entry[],
  source: Source,
  report: FoldReport,
  options: Abortable,
): void {
  report.jobErrors.push({ jobId, error });
  report.left += entries.length;
  report.acknowledgements.push(
    Promise.allSettled(entries.map(({ message }) => source.queue.release(message, options))),
  );
}

/**
 * The entry of a result the leader cannot use that names a unit: its items fail with the reason (as far as the job
 * can have sent such a unit: {@link unitFailures}); it is rejected.
 */
function rejectedUnit(unit: ItemRef, message: ReceivedMessage, rejection: string): Entry {
  const reason = `the leader rejected its unit's result: ${rejection}`.slice(0, MAX_REJECTION_REASON_LENGTH);
  return { outcome: { done: [], failed: [] }, message, rejection, unit: { ref: unit, reason } };
}

/**
 * The items of a unit that a message names without reporting on them (a rejected result, a work-poison message) that
 * may fail with its reason, and why the others may not. A message says which unit it was, but it may be garbage or
 * come from elsewhere: so only a unit no larger than the job's units, within the job, and only its items the job has
 * sent (below its `dispatched` cursor; an item past it was never sent, or will be sent again after a leader's crash)
 * — never the items of other units, processed correctly, or the rest of the job.
 */
function unitFailures(
  deps: Pick<CoordinationDeps, "workUnitMaxItems">,
  state: JobState,
  unit: ItemRef,
  reason: string,
): { failed: UnitOutcome["failed"]; problem?: string } {
  const last = unit.item + unit.count - 1;
  if (last >= state.itemCount)
    return {
      failed: [],
      problem: `item ${last} is out of range for job "${state.id}" (items 0–${state.itemCount - 1})`,
    };
  // As dispatch packs the job (`unitLimits`): fixed at registration; the current setting for a job from before units.
  const maxItems = state.unitMaxItems ?? deps.workUnitMaxItems;
  if (unit.count > maxItems)
    return {
      failed: [],
      problem: `it names ${unit.count} items (${unit.item}–${last}), more than a unit of job "${state.id}" holds (${maxItems})`,
    };
  const end = Math.min(last + 1, state.dispatched);
  const failed = Array.from({ length: Math.max(0, end - unit.item) }, (_, offset) => ({
    item: unit.item + offset,
    reason,
  }));
  if (end > last) return { failed };
  return {
    failed,
    problem: `items ${Math.max(unit.item, end)}–${last} have not been sent (job "${state.id}" has sent items before ${state.dispatched})`,
  };
}

/** Adds what one fold did to another's report. */
function addReport(report: FoldReport, more: FoldReport): void {
  report.folded += more.folded;
  report.duplicates += more.duplicates;
  report.failed += more.failed;
  report.rejected += more.rejected;
  report.discarded += more.discarded;
  report.left += more.left;
  report.jobErrors.push(...more.jobErrors);
  report.completed.push(...more.completed);
  report.acknowledgements.push(...more.acknowledgements);
}

/**
 * The outcome a result message reports, or why the leader cannot use it — with the unit it names when it names one
 * validly (its job, first item and count), whose items then fail with the reason rather than wait for ever.
 */
async function resultOf(
  message: ReceivedMessage,
  readOutcome: OutcomeReader,
): Promise<
  | { ok: true; jobId: string; outcome: UnitOutcome }
  | { ok: false; reason: string; unit?: ItemRef }
  | { ok: "newer"; version: number }
> {
  if (message.text === undefined) return { ok: false, reason: "not valid base64" };
  const newer = newerResultOf(message.text);
  if (newer !== undefined) {
    // A newer worker's (a rolling deploy): left for a newer leader, for as long as results of a missing kind wait.
    if ((message.queuedMs ?? 0) < KIND_WAIT_MS) return { ok: "newer", version: newer.version };
    const reason = `a result of format version ${newer.version}, newer than this leader reads (${RESULT_VERSION}), that no newer leader folded in the hour since it was sent`;
    return { ok: false, reason, ...(newer.unit === undefined ? {} : { unit: newer.unit }) };
  }
  const parsed = parseMessage(resultMessageSchema, message.text);
  if (!parsed.ok) return { ok: false, reason: parsed.reason, unit: resultUnitOf(message.text) };
  const result = parsed.value;
  if (result.v === 2) {
    const outcome = await unitOutcomeOf(result, readOutcome);
    if (!outcome.ok)
      return {
        ok: false,
        reason: outcome.reason,
        unit: { jobId: result.jobId, item: result.first, count: result.count },
      };
    return { ok: true, jobId: result.jobId, outcome: outcome.value };
  }
  if (!result.ok) return { ok: true, jobId: result.jobId, outcome: asUnit({ ...result, ok: false }) };
  if (result.partialBlob === undefined)
    return { ok: true, jobId: result.jobId, outcome: asUnit({ item: result.item, ok: true, partial: result.partial }) };
  const blob = keys.partial(result.jobId, result.item);
  const read = await readOutcome(blob);
  if ("refused" in read)
    return {
      ok: false,
      reason: `reading its partialBlob "${blob}" was refused: ${read.refused}`,
      unit: { jobId: result.jobId, item: result.item, count: 1 },
    };
  const outcome: ItemOutcome =
    "tooLarge" in read
      ? { item: result.item, ok: false, reason: `its partial result blob "${blob}" is not usable: ${read.tooLarge}` }
      : { item: result.item, ok: true, partial: parsedOrUndefined(read.text) };
  return { ok: true, jobId: result.jobId, outcome: asUnit(outcome) };
}

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
  for (const message of messages) {
    const claim = claimPoison(message.text, queue.name);
    if (claim === undefined) unclaimed.push(message);
    else
      addOutcome(byJob, claim.jobId, {
        outcome: { done: [], failed: [] },
        message,
        unit: { ref: claim, reason: claim.reason },
      });
  }
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

/**
 * The outcome a unit result reports (read from its blob when it names one). Every item of the unit is accounted for:
 * one the worker did not name is failed with a reason. A result naming items outside its unit is bad input.
 */
async function unitOutcomeOf(
  result: z.output<typeof unitResultMessageSchema>,
  readOutcome: OutcomeReader,
): Promise<{ ok: true; value: UnitOutcome } | { ok: false; reason: string }> {
  const { first, count } = result;
  let reported: { done: ItemRanges; partial?: unknown; failed: { items: ItemRanges; reason: string }[] } = result;
  if (result.outcomeBlob !== undefined) {
    // Only the blob its worker writes (or a worker of the version before, under its v1 partial's name): any other
    // name may be no blob name at all (storage answers 400), or another job's outcome.
    const expected = keys.outcome(result.jobId, first);
    if (result.outcomeBlob !== expected && result.outcomeBlob !== keys.partial(result.jobId, first))
      return {
        ok: false,
        reason: `its outcomeBlob ${JSON.stringify(result.outcomeBlob.slice(0, 200))} is not the blob its worker writes ("${expected}")`,
      };
    const read = await readOutcome(result.outcomeBlob);
    if ("refused" in read)
      return { ok: false, reason: `reading its outcomeBlob "${result.outcomeBlob}" was refused: ${read.refused}` };
    const parsed =
      "tooLarge" in read
        ? ({ ok: false, reason: read.tooLarge } as const)
        : read.text === undefined
          ? ({ ok: false, reason: "it is missing" } as const)
          : parseMessage(unitOutcomeSchema, read.text);
    reported = parsed.ok
      ? parsed.value
      : {
          done: [],
          failed: [
            {
              items: [[first, first + count - 1]],
              reason: `the unit's result blob "${result.outcomeBlob}" is not usable: ${parsed.reason}`.slice(0, 2000),
            },
          ],
        };
  }
  // Before expanding them: a range may name millions of items.
  const problem = rangesProblem(reported, first, count);
  if (problem !== undefined) return { ok: false, reason: problem };
  const done = fromRanges(reported.done);
  const failed = reported.failed.flatMap(({ items, reason }) => fromRanges(items).map((item) => ({ item, reason })));
  const named = new Set<number>();
  for (const item of [...done, ...failed.map((failure) => failure.item)]) {
    if (named.has(item))
      return { ok: false, reason: `item ${item} is named twice (items ${first}–${first + count - 1})` };
    named.add(item);
  }
  for (let item = first; item < first + count; item++)
    if (!named.has(item)) failed.push({ item, reason: "the worker's result for its unit did not report it" });
  return { ok: true, value: { done, partial: reported.partial, failed } };
}

/**
 * Whether storage refused a request for what it asked (a 4xx answer), not for who asked or when: not 401 or 403 (the
 * app's identity or its permissions), 408 or 429 (a timeout, throttling). Retrying a refused request cannot help.
 */
function refusedForTheRequest(error: unknown): error is StorageError {
  const status = error instanceof StorageError ? error.statusCode : undefined;
  return status !== undefined && status >= 400 && status < 500 && ![401, 403, 408, 429].includes(status);
}

/**
 * Why a unit's reported ranges cannot be its outcome, found without expanding them: a range not inside the unit, or
 * more items named than the unit has (so some twice). Undefined when they may be.
 */
function rangesProblem(
  reported: { done: ItemRanges; failed: { items: ItemRanges }[] },
  first: number,
  count: number,
): string | undefined {
  const last = first + count - 1;
  let named = 0;
  for (const [from, to] of [...reported.done, ...reported.failed.flatMap((failure) => failure.items)]) {
    if (from < first || to > last) return `items ${from}–${to} are not all in its unit (items ${first}–${last})`;
    named += to - from + 1;
    if (named > count) return `it names more items than its unit has (${count}, items ${first}–${last}): some twice`;
  }
  return undefined;
}

function addOutcome(byJob: ByJob, jobId: string, entry: Entry): void {
  const entries = byJob.get(jobId) ?? [];
  entries.push(entry);
  byJob.set(jobId, entries);
}

/**
 * Folds each job's outcomes in one conditional write (retried on a race); returns the messages no job claimed. Once
 * the step's budget is spent, the jobs not folded yet (all but the first) have their messages released for the next
 * step, visible again at once: a batch naming a hundred jobs cannot hold the step a hundred job writes past its
 * budget.
 */
async function applyOutcomes(
  deps: CoordinationDeps,
  jobs: JobStore,
  epoch: number,
  byJob: ByJob,
  source: Source,
  report: FoldReport,
  options: FoldOptions,
): Promise<ReceivedMessage[]> {
  const unclaimed: ReceivedMessage[] = [];
  let started = false;
  for (const [jobId, entries] of byJob) {
    if (started && options.pastBudget?.() === true) {
      report.left += entries.length;
      report.acknowledgements.push(
        Promise.allSettled(entries.map(({ message }) => source.queue.release(message, options))),
      );
      continue;
    }
    started = true;
    const read = await readJobOf(jobs, jobId, options);
    if (!read.ok) {
      leaveUnreadable(jobId, read.error, entries, source, report, options);
      continue;
    }
    const current = read.job;
    if (current === undefined) {
      if (source.noJob === "release") {
        unclaimed.push(...entries.map((entry) => entry.message));
        continue;
      }
      for (const { message, rejection } of entries)
        await reject(deps, source, message, rejection ?? `no job "${jobId}"`, epoch, options);
      report.rejected += entries.length;
      continue;
    }
    if (isStopped(current.value.status)) {
      // Late work of a cancelled or expired job: final, so acknowledged and never counted (a message the leader
      // cannot use still goes to the poison queue with its reason).
      const late = entries.filter((entry) => entry.rejection === undefined);
      for (const { message, rejection } of entries)
        if (rejection !== undefined) await reject(deps, source, message, rejection, epoch, options);
      report.rejected += entries.length - late.length;
      report.discarded += late.length;
      report.acknowledgements.push(
        Promise.allSettled(late.map(({ message }) => source.queue.delete(message, options))),
      );
      continue;
    }
    // An item the job does not have is bad input, not a duplicate: report it with a reason (found by the chaos suite).
    const { itemCount } = current.value;
    let kept: Entry[] = [];
    for (const entry of entries) {
      const last = lastItem(entry.outcome);
      if (last < itemCount) {
        kept.push(entry);
        continue;
      }
      const reason = entry.rejection ?? `item ${last} is out of range for job "${jobId}" (items 0–${itemCount - 1})`;
      await reject(deps, source, entry.message, reason, epoch, options);
      report.rejected++;
    }
    if (deps.registry.get(current.value.kind) === undefined) {
      let left: Entry[];
      ({ kept, left } = leaveForAnotherLeader(deps, current.value.kind, jobId, kept, epoch));
      // Visible again at once, not after the receive's timeout: a leader with the kind may run before this one runs
      // again.
      report.left += left.length;
      report.acknowledgements.push(
        Promise.allSettled(left.map(({ message }) => source.queue.release(message, options))),
      );
    }
    // Outcomes that report on their items first, then the failures of units named by messages that do not: a garbage
    // copy of a unit's result never wins over the valid one in the same batch.
    const outcomes = kept.filter((entry) => entry.unit === undefined).map((entry) => entry.outcome);
    for (const entry of kept) {
      if (entry.unit === undefined) continue;
      const { failed, problem } = unitFailures(deps, current.value, entry.unit.ref, entry.unit.reason);
      outcomes.push({ done: [], failed });
      // A poison message naming items it cannot account for goes back with why (a result is rejected anyway).
      entry.rejection ??= problem;
    }
    // `change` may run again on a fresh read after a lost race: count only the attempt that lands.
    const attempt = { counts: emptyCounts(), completes: false };
    try {
      await jobs.updateJob(
        jobId,
        (state) => {
          attempt.counts = emptyCounts();
          const next = foldOutcomes(deps, state, outcomes, attempt.counts);
          attempt.completes = next?.status === "completed";
          return next;
        },
        options,
        current,
      );
    } catch (error) {
      // A lost race re-reads the job: if that is what failed (the state cannot be read now), it is the job's trouble.
      if (endsTheStep(error, options)) throw error;
      const again = await readJobOf(jobs, jobId, options);
      if (again.ok) throw error;
      leaveUnreadable(jobId, again.error, kept, source, report, options);
      continue;
    }
    report.folded += attempt.counts.folded;
    report.duplicates += attempt.counts.duplicates;
    report.failed += attempt.counts.failed;
    if (attempt.completes) report.completed.push(jobId);
    // Only after the write: a crash before it leaves the messages to be delivered again.
    const used = kept.filter((entry) => entry.rejection === undefined);
    report.acknowledgements.push(Promise.allSettled(used.map(({ message }) => source.queue.delete(message, options))));
    for (const { message, rejection } of kept)
      if (rejection !== undefined) await reject(deps, source, message, rejection, epoch, options);
    report.rejected += kept.length - used.length;
  }
  return unclaimed;
}

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
function leaveForAnotherLeader(
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

/**
 * Folds outcomes into a job state, without I/O: returns the new state, or undefined when nothing changed, and adds
 * what it counted (folded, failed, duplicates) to `report`, which it mutates. Exactly once per
 * item: a unit's partial is merged only if none of its done items is counted yet, and then every one of them is set
 * in the same state (a replayed or duplicated unit is discarded by its bits). The batch's partials are merged with
 * each other first and then into the aggregate once, so a batch costs one pass over the aggregate, not one per
 * result. A job whose aggregate would exceed `maxAggregateGroups`, whose document would pass `maxJobDocumentBytes`, or
 * whose stored aggregate its kind refuses, ends as `failed` with the reason and its counts as they were; a job that
 * has ended takes no more.
 */
export function foldOutcomes(
  deps: Pick<CoordinationDeps, "registry" | "now" | "maxAggregateGroups" | "maxJobDocumentBytes">,
  state: JobState,
  outcomes: Outcome[],
  report: FoldCounts,
): JobState | undefined {
  if (state.status !== "running") {
    report.duplicates += outcomes.reduce(
      (sum, outcome) => sum + (asUnit(outcome).done.length + asUnit(outcome).failed.length),
      0,
    );
    return undefined;
  }
  const kind = deps.registry.get(state.kind);
  // A job registered by a leader without its kind has no aggregate yet (null): the first fold with the kind starts
  // from the kind's empty one.
  const stored = kind?.parsePartial(state.aggregate === null ? kind.empty() : state.aggregate);
  if (stored !== undefined && !stored.ok)
    return endJob(
      deps,
      state,
      `the stored aggregate is not valid for task kind "${state.kind}": ${stored.reason}`.slice(0, 2000),
    );
  const done = Bitmap.fromBase64(state.doneBits, state.itemCount);
  const failed = Bitmap.fromBase64(state.failedBits, state.itemCount);
  const failures = [...state.failures];
  const counts = emptyCounts();
  const partials: unknown[] = [];
  const counted = (item: number): boolean => item >= state.itemCount || done.has(item) || failed.has(item);
  const fail = (item: number, reason: string): void => {
    failed.add(item);
    counts.failed++;
    if (failures.length < MAX_RECORDED_FAILURES) failures.push({ item, reason });
  };
  for (const outcome of outcomes.map(asUnit)) {
    for (const { item, reason } of outcome.failed) {
      if (counted(item)) counts.duplicates++;
      else fail(item, reason);
    }
    if (outcome.done.length === 0) continue;
    const fresh = outcome.done.filter((item) => !counted(item));
    counts.duplicates += outcome.done.length - fresh.length;
    if (fresh.length === 0) continue;
    if (fresh.length < outcome.done.length) {
      // Cannot happen while a job's units keep their boundaries; never count a merged partial twice if it does.
      for (const item of fresh)
        fail(item, "its unit's result overlaps items already counted, so its merged partial cannot be used");
      continue;
    }
    const partial =
      kind?.hasAggregate === false ? { ok: true as const, value: null } : kind?.parsePartial(outcome.partial);
    if (partial === undefined || !partial.ok) {
      for (const item of fresh) fail(item, "the worker's partial result is not valid for this task kind");
      continue;
    }
    if (kind?.hasAggregate === true) partials.push(partial.value);
    for (const item of fresh) done.add(item);
    counts.folded += fresh.length;
  }
  report.duplicates += counts.duplicates;
  if (counts.folded === 0 && counts.failed === 0) return undefined;
  let aggregate = state.aggregate;
  if (kind !== undefined && stored?.ok === true && partials.length > 0) {
    aggregate = kind.merge(stored.value, mergeAll(kind, partials));
    const groups = kind.size(aggregate);
    if (groups > deps.maxAggregateGroups) {
      return endJob(
        deps,
        state,
        `the aggregate would have ${groups} groups, more than MAX_AGGREGATE_GROUPS (${deps.maxAggregateGroups}); ${state.doneCount} items were done and ${state.failedCount} failed when the job stopped`,
      );
    }
  }
  const doneCount = state.doneCount + counts.folded;
  const failedCount = state.failedCount + counts.failed;
  const complete = doneCount + failedCount === state.itemCount;
  const next: JobState = {
    ...state,
    doneBits: done.toBase64(),
    failedBits: failed.toBase64(),
    doneCount,
    failedCount,
    aggregate,
    failures,
    status: complete ? "completed" : state.status,
    ...(complete ? { completedAtMs: deps.now() } : {}),
  };
  // Measured without building it: a document past the bound may be far too large to serialize at all.
  const limit = deps.maxJobDocumentBytes;
  if (jsonByteLength(next, limit) > limit) {
    const groups = kind?.hasAggregate === true ? kind.size(aggregate) : undefined;
    return endTooLarge(
      deps,
      state,
      `the job's document would be more than MAX_JOB_DOCUMENT_BYTES (${limit} bytes) of JSON${groups === undefined ? "" : `, with an aggregate of ${groups} groups`}: its groups' keys are too long, or there are too many of them; ${state.doneCount} items were done and ${state.failedCount} failed when the job stopped`,
    );
  }
  report.folded += counts.folded;
  report.failed += counts.failed;
  return next;
}

/** The job, ended as failed with `reason`: its counts and aggregate stay as they were. */
function endJob(deps: Pick<CoordinationDeps, "now">, state: JobState, reason: string): JobState {
  return { ...state, status: "failed", failureReason: reason, completedAtMs: deps.now() };
}

/**
 * The job, ended as failed because its document would pass MAX_JOB_DOCUMENT_BYTES: as {@link endJob}, so the write
 * that ends it is no larger than the document already stored. Should that one be past the bound itself (written by a
 * version without it, or before the bound was lowered), its aggregate is dropped (null) and the reason says so: the
 * job must be able to end.
 */
function endTooLarge(
  deps: Pick<CoordinationDeps, "now" | "maxJobDocumentBytes">,
  state: JobState,
  reason: string,
): JobState {
  const ended = endJob(deps, state, reason);
  if (jsonByteLength(ended, deps.maxJobDocumentBytes) <= deps.maxJobDocumentBytes) return ended;
  return {
    ...ended,
    aggregate: null,
    failureReason: `${reason}; its aggregate was dropped: it was past the bound already`,
  };
}

/** A v1 partial blob's JSON value; undefined for a missing blob or one that is not JSON (an invalid partial). */
function parsedOrUndefined(text: string | undefined): unknown {
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined; // reported as an invalid partial by the fold
  }
}

/**
 * Moves a message the leader cannot use to the source's poison queue with the reason, logs it, and deletes the
 * original. The leader's rejection names the queue it came from, so the poison fold never claims it again; it always
 * fits a queue message ({@link rejectionText}), or the step would fail on it every time it came back.
 */
async function reject(
  deps: CoordinationDeps,
  source: Source,
  message: ReceivedMessage,
  why: string,
  epoch: number,
  options: Abortable,
): Promise<void> {
  const reason = rejectionReason(why);
  deps.logger.warn(`Rejected message ${message.id} from ${source.queue.name}: ${reason}`, {
    instanceId: deps.instanceId,
    epoch,
  });
  deps.emit({
    type: "message-rejected",
    instanceId: deps.instanceId,
    atMs: deps.now(),
    epoch,
    queue: source.queue.name,
    messageId: message.id,
    reason,
  });
  const header = { by: "leader" as const, reason, queue: source.queue.name, messageId: message.id, atMs: deps.now() };
  await source.poison.send([rejectionText(header, message.rawText)], options);
  source.rejected.add(message.id);
  await source.queue.delete(message, options);
}

function emptyCounts(): FoldCounts {
  return { folded: 0, duplicates: 0, failed: 0 };
}

function emptyReport(): FoldReport {
  return {
    ...emptyCounts(),
    rejected: 0,
    discarded: 0,
    completed: [],
    acknowledgements: [],
    received: 0,
    left: 0,
    jobErrors: [],
    more: false,
  };
}
