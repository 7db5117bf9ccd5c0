import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { Logger } from "../../library/util/logger.js";

/**
 * A task kind: the user's work. Workers call {@link TaskKind.process} once per item of a job of this kind, in any
 * order, on any instance, possibly more than once (a redelivered unit): make it idempotent with
 * {@link TaskContext.idempotencyKey}. When the kind has an {@link TaskKind.aggregate}, what `process` returns is the
 * item's partial result, and the leader folds partial results into the job's aggregate exactly once per item; without
 * one, a job only counts items done and failed (side-effect jobs).
 *
 * @example
 * ```ts
 * const sizes = defineTaskKind({
 *   name: "sizes",
 *   concurrency: 8,
 *   async process(input, context) {
 *     await uploadSomewhere(context.idempotencyKey, input.bytes, { abortSignal: context.abortSignal });
 *     return input.bytes.byteLength;
 *   },
 *   aggregate: { empty: () => 0, merge: (a, b) => a + b },
 * });
 * ```
 */
export interface TaskKind<Params = unknown, Partial = unknown, View = Partial> {
  /** The `kind` a job submission names: 1–64 letters, digits, `.`, `_` or `-`. */
  readonly name: string;
  /**
   * Validates a job's `params` when it is submitted (a bad one gets a `400` naming each field) and again in the worker.
   * Any Standard Schema (zod 4, valibot, arktype, …) that validates synchronously. A submission without params gives
   * `null`. Params travel in every work message: at most 4 KiB as JSON. @default none: params are passed on as
   * submitted (any JSON value, `null` when absent)
   */
  readonly params?: StandardSchemaV1<unknown, Params>;
  /**
   * How many items of one work unit this kind processes at once, 1–64 (I/O-bound kinds want more than one; CPU-bound
   * ones gain nothing in one process). @default the app setting WORK_UNIT_CONCURRENCY (1)
   */
  readonly concurrency?: number;
  /**
   * Processes one item. Throw {@link ItemError} when the input is unusable (the item fails alone, with your message,
   * and is not retried); any other error is transient: the host delivers the item's unit again (up to 5 times), and on
   * the last delivery the item fails with the error. Must stop soon after `context.abortSignal` fires.
   *
   * @returns the item's partial result (JSON-serializable) when the kind has an aggregate; ignored otherwise
   */
  process(input: TaskInput, context: TaskContext<Params>): Promise<Partial> | Partial;
  /** How partial results combine into the job's aggregate. @default none: jobs count items done and failed only */
  readonly aggregate?: TaskAggregate<Partial, View>;
  /**
   * Limits that hold across every instance and every app sharing the coordinator: items of this kind running at once
   * and started per period, for the kind as a whole and per key (the tenant, the host an item calls, …). The leader
   * hands each work unit a share of each limit, written down before the unit is sent; items over a limit wait, none
   * is dropped. @default none: only `concurrency` (per unit) bounds the kind
   */
  readonly limits?: TaskLimits<Params>;
}

/**
 * A task kind's global limits ({@link TaskKind.limits}). Every number is a whole number; `perKey` needs `key`.
 *
 * @example
 * ```ts
 * limits: {
 *   concurrency: 10,                                   // at most 10 items running at once, everywhere
 *   rate: { limit: 50, periodSeconds: 1 },             // at most 50 started in any 1-second window
 *   key: (item) => new URL(item.text).host,            // the host each item calls
 *   perKey: { concurrency: 2, rate: { limit: 5, periodSeconds: 1 } },
 * }
 * ```
 */
export interface TaskLimits<Params = unknown> {
  /** Most items of this kind running at once, across every instance: 1–10,000. @default no limit */
  readonly concurrency?: number;
  /** Most items of this kind started per period, across every instance. @default no limit */
  readonly rate?: RateLimit;
  /**
   * The key an item's `perKey` limits count it under: 1–128 characters. Called by the leader when it sends the item
   * (never by a worker), so it sees the item as stored — inline text, or the name of its input blob — and the job's
   * params. Must be synchronous, fast and the same for the same item. An item whose key cannot be had (it throws, or
   * returns anything but such a string) fails alone with the reason. @default none: `perKey` needs it
   */
  readonly key?: LimitKey<Params>;
  /** Limits each key holds on its own (at most 16 distinct keys go in one work unit). @default none */
  readonly perKey?: { readonly concurrency?: number; readonly rate?: RateLimit };
}

/**
 * Items started per period: at most `limit` start in any window of `periodSeconds` — every window, not only aligned
 * ones. With `burst` below `limit`, at most `burst` start in any window of `periodSeconds ÷ ⌊limit ÷ burst⌋`, so the
 * starts are spread over the period (and at most `burst × ⌊limit ÷ burst⌋` start per period, exactly `limit` when
 * `burst` divides it).
 */
export interface RateLimit {
  /** Most starts per period: 1–100,000. */
  readonly limit: number;
  /** The period, in seconds: 1–86,400 (a day); a whole number. */
  readonly periodSeconds: number;
  /** Most starts at once: 1 to `limit`. @default limit */
  readonly burst?: number;
}

/**
 * A kind's key function ({@link TaskLimits.key}). Declared through a method's type so that a kind of any params fits
 * where a kind of unknown params is expected, as `process` does.
 */
export type LimitKey<Params> = { key(item: LimitItem, params: Params): string }["key"];

/** An item as a kind's {@link TaskLimits.key} sees it: as stored, before any worker reads its blob. */
export interface LimitItem {
  /** The item's index in the job, from 0. */
  readonly index: number;
  /** An inline item's text; undefined for an item naming a blob. */
  readonly text: string | undefined;
  /** The name of the blob in the input container the item names; undefined for an inline item. */
  readonly blob: string | undefined;
}

/**
 * How a kind's partial results combine. `merge` must be associative and commutative with `empty()` as its identity,
 * so results can fold in any order and the aggregate never depends on which worker, leader or retry produced what.
 */
export interface TaskAggregate<Partial, View = Partial> {
  /** The identity of {@link TaskAggregate.merge}: the aggregate of a job before any item is done. */
  empty(): Partial;
  /** Combines two partial results (must not change either). */
  merge(a: Partial, b: Partial): Partial;
  /** The aggregate as users read it (job status, the final result). @default the partial itself */
  view?(partial: Partial): View;
  /**
   * How many groups (entries) a partial holds; a job whose aggregate would exceed `MAX_AGGREGATE_GROUPS` fails.
   * @default the length of an array, the number of keys of an object, otherwise 1
   */
  size?(partial: Partial): number;
  /**
   * Validates a partial read back from a queue or from state (storage is never trusted blindly): a result it refuses
   * fails its items, a stored aggregate it refuses fails the job. @default none: any JSON value is accepted
   */
  readonly schema?: StandardSchemaV1<unknown, Partial>;
}

/** One item's input, as the worker hands it to {@link TaskKind.process}. */
export interface TaskInput {
  /** The input's bytes: an inline item's text as UTF-8, or the content of the blob the item names. */
  readonly bytes: Uint8Array;
  /** The same input as UTF-8 text (decoded once, on first use). */
  readonly text: string;
  /** The name of the blob in the input container the item names; undefined for an inline item. */
  readonly blob: string | undefined;
}

/** What else {@link TaskKind.process} gets besides the input. */
export interface TaskContext<Params> {
  /** The job's params, as validated by {@link TaskKind.params}. */
  readonly params: Params;
  /** The job's id. */
  readonly jobId: string;
  /** The item's index in the job, from 0. */
  readonly index: number;
  /**
   * A key unique to this item of this job and the same on every delivery (`<jobId>/<index>`): name what the item
   * writes after it (an output blob, a row), or pass it to an API that deduplicates, so a redelivered unit does not
   * write twice. Safe as a blob name.
   */
  readonly idempotencyKey: string;
  /**
   * Fires when the item should stop: the host is shutting down (the unit will be delivered again), the job was
   * cancelled or has ended, or another item of the unit failed transiently. Pass it to every call that waits.
   */
  readonly abortSignal: AbortSignal;
  /** The invocation's logger: lines reach Application Insights with the function's other logs. */
  readonly logger: Logger;
}

/**
 * Returns the kind as given: a typed way to write one, inferring `Params` from its schema, `Partial` from `process`
 * and `View` from the aggregate's `view` (the partial itself without one).
 */
export function defineTaskKind<Params = unknown, Partial = unknown, View = Partial>(
  kind: TaskKind<Params, Partial, View>,
): TaskKind<Params, Partial, View> {
  return kind;
}

/**
 * The aggregate a job of kind `K` reports, as users read it (its `view`, else the partial), e.g.
 * `JobStatus<AggregateOf<typeof wordCount>>`: what `waitForJob(id, { kind })` returns.
 */
export type AggregateOf<K> = K extends TaskKind<unknown, unknown, infer View> ? View : unknown;

/**
 * The input of one item is unusable: retrying cannot help. Thrown by {@link TaskKind.process}; the item is recorded as
 * failed with this message (its unit's other items still count).
 */
export class ItemError extends Error {
  /** The error's stable code. */
  readonly code = "InvalidItem";
  /** An item error with the reason recorded for the item; `options.cause` keeps the error behind it. */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ItemError";
  }
}
