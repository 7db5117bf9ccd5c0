import { Bitmap } from "../state/bitmap.js";
import type { CoordinationDeps } from "../deps.js";
import { emptyCounts, type FoldCounts } from "./foldReport.js";
import { endJob, endTooLarge } from "./endJob.js";
import { heldItems, INFERRED_FAILURE_HOLD_MS } from "../state/heldItems.js";
import { MAX_RECORDED_FAILURES, type JobState } from "../state/jobState.js";
import { jsonByteLength } from "../state/jsonSize.js";
import { mergeAll, type RegisteredKind } from "../kinds/taskRegistry.js";

/** An outcome for one item, from a v1 result message. */
export type ItemOutcome = { item: number; ok: true; partial: unknown } | { item: number; ok: false; reason: string };

/**
 * The outcome of a unit of items, from a result message, the poison queue or dispatch: the items done, with their
 * partials merged into one, and the failed items with reasons; or, from a message that names a unit without reporting
 * on it (a result the leader cannot read, a work-poison message), the items it names, to hold with the reason
 * (`state/heldItems.ts`).
 */
export interface UnitOutcome {
  done: number[];
  partial?: unknown;
  failed: { item: number; reason: string }[];
  held?: { item: number; reason: string }[];
}

/** What the fold takes: unit outcomes, or item outcomes (results of leaders before work units). */
export type Outcome = UnitOutcome | ItemOutcome;

/** A unit outcome for any outcome. */
export function asUnit(outcome: Outcome): UnitOutcome {
  if (!("item" in outcome)) return outcome;
  return outcome.ok
    ? { done: [outcome.item], partial: outcome.partial, failed: [] }
    : { done: [], failed: [{ item: outcome.item, reason: outcome.reason }] };
}

/** The highest item an outcome names (-1 for none). */
export function lastItem(outcome: UnitOutcome): number {
  const named = [...outcome.failed, ...(outcome.held ?? [])].map((failure) => failure.item);
  return Math.max(-1, ...outcome.done.slice(-1), ...named);
}

/**
 * Folds outcomes into a job state, without I/O: returns the new state, or undefined when nothing changed, and adds
 * what it counted (folded, failed, duplicates) to `report`, which it mutates. Exactly once per
 * item: a unit's partial is merged only if none of its done items is counted yet, and then every one of them is set
 * in the same state (a replayed or duplicated unit is discarded by its bits). The batch's partials are merged with
 * each other first and then into the aggregate once, so a batch costs one pass over the aggregate, not one per
 * result. Items an outcome holds (a failure inferred, not reported) are held until `inferredFailureHoldMs` from now at
 * least, and count toward nothing: the unit's own result still decides them. A job whose aggregate would exceed
 * `maxAggregateGroups`, whose document would pass `maxJobDocumentBytes`, or whose stored aggregate its kind refuses,
 * ends as `failed` with the reason and its counts as they were; a job that has ended takes no more.
 */
export function foldOutcomes(
  deps: Pick<
    CoordinationDeps,
    "registry" | "now" | "maxAggregateGroups" | "maxJobDocumentBytes" | "inferredFailureHoldMs"
  >,
  state: JobState,
  outcomes: Outcome[],
  report: FoldCounts,
): JobState | undefined {
  if (state.status !== "running") {
    report.duplicates += outcomes.reduce((sum, outcome) => {
      const { done, failed, held = [] } = asUnit(outcome);
      return sum + done.length + failed.length + held.length;
    }, 0);
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
  const { done, failed, held, failures, counts, partials, revived, newlyHeld } = countOutcomes(state, kind, outcomes);
  report.duplicates += counts.duplicates;
  if (counts.folded === 0 && counts.failed === 0 && newlyHeld === 0) return undefined;
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
  const failedCount = state.failedCount + counts.failed - revived;
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
  delete next.heldBits;
  delete next.heldUntilMs;
  if (!held.isEmpty()) {
    next.heldBits = held.toBase64();
    const until = newlyHeld > 0 ? deps.now() + (deps.inferredFailureHoldMs ?? INFERRED_FAILURE_HOLD_MS) : 0;
    next.heldUntilMs = Math.max(state.heldUntilMs ?? 0, until);
  }
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

/** What a batch's outcomes do to a job's items: its bits and failures as they become, the counts, the partials. */
interface Counted {
  done: Bitmap;
  failed: Bitmap;
  held: Bitmap;
  failures: JobState["failures"];
  counts: FoldCounts;
  /** The partials of the units newly done, to merge (a kind with an aggregate only). */
  partials: unknown[];
  /** Items failed before that a unit's result reported done: now done (in `counts.folded`), no longer failed. */
  revived: number;
  /** Items held by this batch that were neither counted nor held before. */
  newlyHeld: number;
}

/**
 * A batch's outcomes counted against the job's bits: an item already done or failed is a duplicate; a unit's done
 * items count only if none of them is done already and its partial is valid for the kind, else they fail with the
 * reason; those of them failed before (a failure inferred once the hold had passed, or another copy's) then count as
 * done instead, and those held are let go. An item held is held once: naming it again changes nothing.
 */
function countOutcomes(state: JobState, kind: RegisteredKind | undefined, outcomes: Outcome[]): Counted {
  const done = Bitmap.fromBase64(state.doneBits, state.itemCount);
  const failed = Bitmap.fromBase64(state.failedBits, state.itemCount);
  const held = heldItems(state) ?? Bitmap.empty(state.itemCount);
  const failures = [...state.failures];
  const counts = emptyCounts();
  const partials: unknown[] = [];
  // Items whose recorded reason goes: revived, or held and now decided by their unit's own result.
  const settled = new Set<number>();
  let revived = 0;
  let newlyHeld = 0;
  const counted = (item: number): boolean => item >= state.itemCount || done.has(item) || failed.has(item);
  const record = (item: number, reason: string): void => {
    if (failures.length < MAX_RECORDED_FAILURES) failures.push({ item, reason });
  };
  const fail = (item: number, reason: string): void => {
    if (held.delete(item)) settled.add(item);
    failed.add(item);
    counts.failed++;
    record(item, reason);
  };
  for (const outcome of outcomes.map(asUnit)) {
    for (const { item, reason } of outcome.failed) {
      if (counted(item)) counts.duplicates++;
      else fail(item, reason);
    }
    for (const { item, reason } of outcome.held ?? []) {
      if (counted(item) || held.has(item)) counts.duplicates++;
      else if (held.add(item)) {
        newlyHeld++;
        record(item, reason);
      }
    }
    if (outcome.done.length === 0) continue;
    const fresh = outcome.done.filter((item) => !counted(item));
    // Failed but reported done by the unit's own result: another copy's failure, or one inferred and made final once
    // its hold had passed. They were processed, and a failed item added nothing to the aggregate: with the unit's
    // partial they count as done, once.
    const failedBefore = outcome.done.filter((item) => !done.has(item) && failed.has(item));
    const usable = fresh.length + failedBefore.length === outcome.done.length; // none of them done already
    if (!usable || fresh.length + failedBefore.length === 0) {
      counts.duplicates += outcome.done.length - fresh.length;
      // Cannot happen while a job's units keep their boundaries; never count a merged partial twice if it does.
      for (const item of fresh)
        fail(item, "its unit's result overlaps items already counted, so its merged partial cannot be used");
      continue;
    }
    const partial =
      kind?.hasAggregate === false ? { ok: true as const, value: null } : kind?.parsePartial(outcome.partial);
    if (partial === undefined || !partial.ok) {
      counts.duplicates += failedBefore.length;
      for (const item of fresh) fail(item, "the worker's partial result is not valid for this task kind");
      continue;
    }
    if (kind?.hasAggregate === true) partials.push(partial.value);
    for (const item of failedBefore) {
      failed.delete(item);
      settled.add(item);
    }
    for (const item of outcome.done) {
      done.add(item);
      if (held.delete(item)) settled.add(item);
    }
    counts.folded += outcome.done.length;
    revived += failedBefore.length;
  }
  const kept = settled.size === 0 ? failures : reasonsOfSettled(failures, settled, done);
  return { done, failed, held, failures: kept, counts, partials, revived, newlyHeld };
}

/**
 * The failures, each item decided again in this batch (`settled`: held and now decided by its unit's own result, or
 * failed and now done) keeping only its latest reason, and none once it is done.
 */
function reasonsOfSettled(
  failures: JobState["failures"],
  settled: ReadonlySet<number>,
  done: Bitmap,
): JobState["failures"] {
  const latest = new Map<number, number>();
  for (const [index, failure] of failures.entries()) if (settled.has(failure.item)) latest.set(failure.item, index);
  return failures.filter(
    (failure, index) => !settled.has(failure.item) || (latest.get(failure.item) === index && !done.has(failure.item)),
  );
}
