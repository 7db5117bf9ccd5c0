import { applyOutcomes } from "./applyOutcomes.js";
import type { CoordinationDeps } from "../deps.js";
import { addOutcome, type ByJob, type Entry, type FoldOptions, type Source } from "./foldEntries.js";
import { addReport, emptyReport, type FoldReport } from "./foldReport.js";
import type { JobStore } from "../state/jobStore.js";
import { MAX_OUTCOME_BYTES, outcomeTooLarge, resultUnitOf, RESULT_VERSION, type ItemRef } from "../ports/messages.js";
import type { OpenedBlob, ReceivedMessage } from "../ports/ports.js";
import { readBounded, resultOf, type OutcomeReader } from "./readResult.js";
import { MAX_REJECTION_REASON_LENGTH } from "../ports/rejection.js";
import { blamesTheMessage, refusedForTheRequest, reject } from "./rejectMessages.js";
import { GrantEnds } from "./grantEnds.js";
import { nextGrant, type GrantLoss } from "../flow/grant.js";
import { unitHasLiveGrant, type Ledger } from "../state/grantLedger.js";

/**
 * Receives per fold batch (32 messages each) when the first comes back full, made at once: fewer round trips per
 * result, one state write per job.
 */
const PARALLEL_RECEIVES = 4;
/** Most messages one fold batch takes. */
export const FOLD_BATCH_SIZE = 32 * PARALLEL_RECEIVES;

/**
 * Seconds a received result stays invisible: long enough to fold and delete, short enough for a new leader to see it
 * soon.
 */
export const RESULT_VISIBILITY_S = 30;

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
  // One receive first: while results trickle in (a pass every few units' results), it answers all there is, and three
  // more would come back empty — most of a job's receives (issue 35). A full one means a backlog: the rest at once.
  const first = await deps.resultsQueue.receive(32, RESULT_VISIBILITY_S, options);
  const rest =
    first.length < 32
      ? []
      : await Promise.all(
          Array.from({ length: PARALLEL_RECEIVES - 1 }, () =>
            deps.resultsQueue.receive(32, RESULT_VISIBILITY_S, options),
          ),
        );
  const messages = [first, ...rest].flat();
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
    // A receive that came back short took every result visible then; none of them left for another leader or step.
    drained: (first.length < 32 || rest.some((batch) => batch.length < 32)) && report.waiting === 0,
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
  // Grants the messages show ended are taken back before any of them is acknowledged.
  const ends = new GrantEnds();
  const foldRound = async (): Promise<void> => {
    const full = round.byJob;
    round = { byJob: new Map(), bytes: 0 };
    await ends.flush(jobs, deps.now(), options);
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
  const regrants: Regrant[] = [];
  for (const message of messages) {
    const bytes = Buffer.byteLength(message.text ?? message.rawText);
    if (!fits(bytes)) await foldRound();
    round.bytes += bytes;
    ends.add(message);
    const read = await resultOf(message, readOutcome);
    if (read.ok === "newer") newer.push({ message, version: read.version });
    else if (read.ok === "regrant") regrants.push({ ...read, message });
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
    report.waiting += newer.length;
  }
  for (const [jobId, entries] of named) for (const entry of entries) addOutcome(round.byJob, jobId, entry);
  const ledger = await ends.flush(jobs, deps.now(), options);
  if (regrants.length > 0) {
    const known = ledger ?? (await jobs.ledger.read(options));
    addRegrants(round.byJob, regrants, known, deps.now(), report, source, options);
  }
  await applyOutcomes(deps, jobs, epoch, round.byJob, source, report, options);
  return report;
}

/** A copy that gave its grant back unstarted (expired, or its job stopped): its unit may need sending again. */
interface Regrant {
  jobId: string;
  unit: ItemRef;
  grantId: string;
  how: GrantLoss;
  message: ReceivedMessage;
}

/**
 * Regrants into the batch: a unit another grant still covers (sent again already, at its grant's expiry) needs
 * nothing more, and its message is acknowledged; the others go to their job's resend list, in the job's write.
 */
function addRegrants(
  byJob: ByJob,
  regrants: readonly Regrant[],
  ledger: Ledger,
  nowMs: number,
  report: FoldReport,
  source: Source,
  options: FoldOptions,
): void {
  for (const { jobId, unit, grantId, how, message } of regrants) {
    if (unitHasLiveGrant(ledger, { jobId, first: unit.item }, grantId, nowMs)) {
      report.acknowledgements.push(Promise.allSettled([source.queue.delete(message, options)]));
      continue;
    }
    const previous = ledger.grants.find((grant) => grant.id === grantId);
    addOutcome(byJob, jobId, {
      outcome: { done: [], failed: [] },
      message,
      resend: { ...nextGrant(previous, how), first: unit.item, count: unit.count },
    });
  }
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
 * The entry of a result the leader cannot use that names a unit: its items fail with the reason (as far as the job
 * can have sent such a unit: {@link unitFailures}); it is rejected.
 */
function rejectedUnit(unit: ItemRef, message: ReceivedMessage, rejection: string): Entry {
  const reason = `the leader rejected its unit's result: ${rejection}`.slice(0, MAX_REJECTION_REASON_LENGTH);
  return { outcome: { done: [], failed: [] }, message, rejection, unit: { ref: unit, reason } };
}
