import type { CoordinationDeps } from "../deps.js";
import type { ByJob, Entry, FoldOptions, Source } from "./foldEntries.js";
import { foldOutcomes, lastItem, type UnitOutcome } from "./foldOutcomes.js";
import { emptyCounts, type FoldCounts, type FoldReport } from "./foldReport.js";
import { isStopped, keys, type JobState } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";
import { resultUnitOf, type ItemRef } from "../ports/messages.js";
import type { ReceivedMessage } from "../ports/ports.js";
import { endsTheStep, reject } from "./rejectMessages.js";
import { leaveForAnotherLeader } from "./missingKind.js";
import { withResends, type ResendUnit } from "../flow/resend.js";
import type { Versioned } from "../../library/fencing/FencedStateStore.js";
import type { Abortable } from "../../library/util/delay.js";

/**
 * A job's state, or the error reading or parsing it (damaged, or of a shape a newer version wrote): the job's
 * trouble, never its messages', and no reason to stop folding the other jobs. The leader's own end still throws.
 */
export async function readJobOf(
  jobs: JobStore,
  jobId: string,
  options: Abortable,
  from: "latest" | "storage" = "latest",
): Promise<{ ok: true; job: Versioned<JobState> | undefined } | { ok: false; error: unknown }> {
  try {
    return { ok: true, job: await (from === "latest" ? jobs.latestJob(jobId, options) : jobs.readJob(jobId, options)) };
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
 * The items of a unit that a message names without reporting on them (a rejected result, a work-poison message) that
 * may be held with its reason (`state/heldItems.ts`: failed only if their unit's own result never comes), and why the
 * others may not. A message says which unit it was, but it may be garbage or come from elsewhere: so only a unit no
 * larger than the job's units, within the job, and only its items the job has sent (below its `dispatched` cursor; an
 * item past it was never sent, or will be sent again after a leader's crash) — never the items of other units, or the
 * rest of the job.
 */
function unitFailures(
  deps: Pick<CoordinationDeps, "workUnitMaxItems">,
  state: JobState,
  unit: ItemRef,
  reason: string,
): { failed: NonNullable<UnitOutcome["held"]>; problem?: string } {
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

/**
 * Folds each job's outcomes in one conditional write (retried on a race); returns the messages no job claimed. Once
 * the step's budget is spent, the jobs not folded yet (all but the first) have their messages released for the next
 * step, visible again at once: a batch naming a hundred jobs cannot hold the step a hundred job writes past its
 * budget.
 */
export async function applyOutcomes(
  deps: CoordinationDeps,
  jobs: JobStore,
  epoch: number,
  byJob: ByJob,
  source: Source,
  report: FoldReport,
  options: FoldOptions,
): Promise<ReceivedMessage[]> {
  const fold: Fold = { deps, jobs, epoch, source, report, options };
  const unclaimed: ReceivedMessage[] = [];
  let started = false;
  for (const [jobId, entries] of byJob) {
    if (started && options.pastBudget?.() === true) {
      report.left += entries.length;
      report.waiting += entries.length;
      report.acknowledgements.push(
        Promise.allSettled(entries.map(({ message }) => source.queue.release(message, options))),
      );
      continue;
    }
    started = true;
    const read = await readJobOf(jobs, jobId, options);
    if (!read.ok) leaveUnreadable(jobId, read.error, entries, source, report, options);
    else if (read.job !== undefined && isStopped(read.job.value.status)) await discardLateWork(fold, entries);
    else if (read.job !== undefined) await foldIntoJob(fold, jobId, read.job, entries);
    else if (source.noJob === "release") unclaimed.push(...entries.map((entry) => entry.message));
    else await rejectForNoJob(fold, jobId, entries);
  }
  return unclaimed;
}

/** What folding a batch's outcomes into their jobs works with. */
interface Fold {
  deps: CoordinationDeps;
  jobs: JobStore;
  epoch: number;
  source: Source;
  report: FoldReport;
  options: FoldOptions;
}

/** Messages naming a job there is no state of: to the poison queue, with why. */
async function rejectForNoJob(fold: Fold, jobId: string, entries: readonly Entry[]): Promise<void> {
  const { deps, source, epoch, options } = fold;
  for (const { message, rejection } of entries) {
    await reject(deps, source, message, rejection ?? `no job "${jobId}"`, epoch, options);
    // A late duplicate unit of a job retention has removed wrote its outcome blob after the removal: nothing else
    // would ever delete it (issue 37, item 6c). The result named it; the job is gone, so nobody reads it.
    const unit = resultUnitOf(message.text ?? "");
    if (unit !== undefined && unit.jobId === jobId)
      await Promise.all(
        [keys.outcome(jobId, unit.item), keys.partial(jobId, unit.item)].map((name) =>
          deps.system.delete(name, options),
        ),
      );
  }
  fold.report.rejected += entries.length;
}

/**
 * Late work of a cancelled or expired job: final, so acknowledged and never counted (a message the leader cannot use
 * still goes to the poison queue with its reason).
 */
async function discardLateWork(fold: Fold, entries: readonly Entry[]): Promise<void> {
  const { deps, source, epoch, report, options } = fold;
  const late = entries.filter((entry) => entry.rejection === undefined);
  for (const { message, rejection } of entries)
    if (rejection !== undefined) await reject(deps, source, message, rejection, epoch, options);
  report.rejected += entries.length - late.length;
  report.discarded += late.length;
  report.acknowledgements.push(Promise.allSettled(late.map(({ message }) => source.queue.delete(message, options))));
}

/**
 * A running or ended job's outcomes in one conditional write, then its messages acknowledged (or rejected with why).
 * Outcomes of items the job does not have are rejected first; a leader lacking the job's kind leaves what it cannot
 * fold for one that has it.
 */
async function foldIntoJob(
  fold: Fold,
  jobId: string,
  current: Versioned<JobState>,
  entries: readonly Entry[],
): Promise<void> {
  const { deps, jobs, source, report, options } = fold;
  const kept = await keepKnownItems(fold, jobId, current.value, entries);
  const outcomes = outcomesOf(deps, current.value, kept);
  const resends = kept.flatMap((entry) => (entry.resend === undefined ? [] : [entry.resend]));
  // `change` may run again on a fresh read after a lost race: count only the attempt that lands.
  const attempt = { counts: emptyCounts(), completes: false };
  try {
    await jobs.updateJob(
      jobId,
      (state) => {
        attempt.counts = emptyCounts();
        const next = withResent(deps, foldOutcomes(deps, state, outcomes, attempt.counts) ?? state, resends, attempt);
        attempt.completes = next.status === "completed";
        return next === state ? undefined : next;
      },
      options,
      current,
    );
  } catch (error) {
    // A lost race re-reads the job: if that is what failed (the state cannot be read now), it is the job's trouble.
    if (endsTheStep(error, options)) throw error;
    const again = await readJobOf(jobs, jobId, options, "storage");
    if (again.ok) throw error;
    leaveUnreadable(jobId, again.error, kept, source, report, options);
    return;
  }
  report.folded += attempt.counts.folded;
  report.duplicates += attempt.counts.duplicates;
  report.failed += attempt.counts.failed;
  if (attempt.completes) report.completed.push(jobId);
  // Only after the write: a crash before it leaves the messages to be delivered again.
  const used = kept.filter((entry) => entry.rejection === undefined);
  report.acknowledgements.push(Promise.allSettled(used.map(({ message }) => source.queue.delete(message, options))));
  for (const { message, rejection } of kept)
    if (rejection !== undefined) await reject(deps, source, message, rejection, fold.epoch, options);
  report.rejected += kept.length - used.length;
}

/**
 * A limited job's units to send again added to its resend list (in the same write as the batch's outcomes); those
 * that had too many grants fail their open items instead, counted in `attempt`.
 */
function withResent(
  deps: CoordinationDeps,
  state: JobState,
  resends: readonly ResendUnit[],
  attempt: { counts: FoldCounts },
): JobState {
  const more = withResends(state, resends);
  if (more === undefined) return state;
  const listed = { ...state, resend: more.resend };
  if (more.failed.length === 0) return listed;
  return foldOutcomes(deps, listed, [{ done: [], failed: more.failed }], attempt.counts) ?? listed;
}

/**
 * The entries to fold into a job: an item the job does not have is bad input, not a duplicate, so it is rejected with
 * a reason (found by the chaos suite); a leader lacking the job's kind releases what it cannot fold (visible again at
 * once, not after the receive's timeout: a leader with the kind may run before this one runs again).
 */
async function keepKnownItems(fold: Fold, jobId: string, job: JobState, entries: readonly Entry[]): Promise<Entry[]> {
  const { deps, source, epoch, report, options } = fold;
  const { itemCount } = job;
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
  if (deps.registry.get(job.kind) === undefined) {
    let left: Entry[];
    ({ kept, left } = leaveForAnotherLeader(deps, job.kind, jobId, kept, epoch));
    report.left += left.length;
    report.waiting += left.length;
    report.acknowledgements.push(Promise.allSettled(left.map(({ message }) => source.queue.release(message, options))));
  }
  return kept;
}

/**
 * The outcomes to fold: those that report on their items first, then the units named by messages that do not, whose
 * items are held (a failure inferred, not reported: their unit's own result still decides them, whenever it comes). A
 * poison message naming items it cannot account for goes back with why (a result is rejected anyway).
 */
function outcomesOf(deps: CoordinationDeps, job: JobState, kept: readonly Entry[]): UnitOutcome[] {
  const outcomes = kept.filter((entry) => entry.unit === undefined).map((entry) => entry.outcome);
  for (const entry of kept) {
    if (entry.unit === undefined) continue;
    const { failed, problem } = unitFailures(deps, job, entry.unit.ref, entry.unit.reason);
    outcomes.push({ done: [], failed: [], held: failed });
    entry.rejection ??= problem;
  }
  return outcomes;
}
