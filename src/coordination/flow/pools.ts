import { MAX_LIMIT_KEY_CHARS, kindLimitsOf, poolLimitOf, type PoolLimit } from "../kinds/kindLimits.js";
import type { RegisteredKind } from "../kinds/taskRegistry.js";
import type { ItemInput } from "../ports/messages.js";
import type { JobState, StoredKindLimits } from "../state/jobState.js";

/**
 * A pool is one limit's count, shared by everything that counts against it: a kind's (`k:<kind>`), one key's of a kind
 * (`k:<kind>/<key>`; kind names have no `/`), a job's own (`j:<job>`). The ledger sums the shares by these names.
 */

/** The pool of a kind as a whole. */
export const kindPool = (kind: string): string => `k:${kind}`;
/** The pool of one key of a kind. */
export const keyPool = (kind: string, key: string): string => `k:${kind}/${key}`;
/** The pool of a job's own limits. */
export const jobPool = (jobId: string): string => `j:${jobId}`;

/** A pool and its limit. */
export interface NamedPool {
  id: string;
  limit: PoolLimit;
}

/** An item's key, or why it has none. */
export type KeyOf = (item: ItemInput, index: number) => { ok: true; key: string } | { ok: false; reason: string };

/** Which limits a job's items count against. */
export interface JobFlow {
  /** Pools every item counts against: its kind's, its own. */
  every: NamedPool[];
  /** Per-key limits: each item also counts against the pool of its key. */
  perKey?: { limit: PoolLimit; kind: string; keyOf: KeyOf };
  /**
   * Its kind has per-key limits this leader cannot apply: it lacks the kind, so its key function. Its items wait for a
   * leader that has it.
   */
  keysUnknown?: true;
}

/**
 * The limits a job's items count against, or undefined when there are none. Its kind's as this leader's code defines
 * them (a deploy may have changed them since the job was submitted), or — when this leader lacks the kind — as its
 * submitter knew them; and the job's own.
 */
export function jobFlowOf(
  kind: RegisteredKind | undefined,
  job: Pick<JobState, "id" | "kind" | "params" | "limits" | "kindLimits">,
): JobFlow | undefined {
  const limits = kind === undefined ? storedKindLimits(job.kindLimits) : kind.limits;
  const every: NamedPool[] = [];
  if (limits?.kind !== undefined) every.push({ id: kindPool(job.kind), limit: limits.kind });
  const own = poolLimitOf(job.limits);
  if (own !== undefined) every.push({ id: jobPool(job.id), limit: own });
  const key = limits?.key;
  const keysUnknown = kind === undefined && job.kindLimits?.keyed === true;
  if (every.length === 0 && key === undefined && !keysUnknown) return undefined;
  return {
    every,
    ...(limits?.perKey === undefined || key === undefined
      ? {}
      : {
          perKey: {
            limit: limits.perKey,
            kind: job.kind,
            keyOf: (item, index) => callKey(key, item, index, job.params),
          },
        }),
    ...(keysUnknown ? { keysUnknown: true as const } : {}),
  };
}

/** A kind's limits as the submitter stored them (no key function: `keyed` says there was one). */
function storedKindLimits(stored: StoredKindLimits | undefined): ReturnType<typeof kindLimitsOf> {
  if (stored === undefined) return undefined;
  const kind = poolLimitOf(stored);
  return kind === undefined ? undefined : { kind };
}

/** The kind's key of an item, checked: a string of 1–{@link MAX_LIMIT_KEY_CHARS} characters. */
function callKey(
  key: NonNullable<NonNullable<RegisteredKind["limits"]>["key"]>,
  item: ItemInput,
  index: number,
  params: unknown,
): { ok: true; key: string } | { ok: false; reason: string } {
  let value: unknown;
  try {
    value = key(
      { index, text: "inline" in item ? item.inline : undefined, blob: "blob" in item ? item.blob : undefined },
      params,
    );
  } catch (error) {
    return {
      ok: false,
      reason: `its kind's limits.key threw: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  if (typeof value !== "string")
    return {
      ok: false,
      reason: `its kind's limits.key returned ${value === null ? "null" : typeof value}, not a string`,
    };
  if (value.length === 0 || value.length > MAX_LIMIT_KEY_CHARS)
    return {
      ok: false,
      reason: `its kind's limits.key returned a key of ${value.length} characters; a key has 1–${MAX_LIMIT_KEY_CHARS}`,
    };
  return { ok: true, key: value };
}

/** What a job's spec keeps of its kind's limits (numbers only), so a leader without the kind still holds it to them. */
export function storedLimitsOfKind(kind: RegisteredKind): StoredKindLimits | undefined {
  const { limits } = kind;
  if (limits === undefined) return undefined;
  const plain = (
    pool: PoolLimit | undefined,
  ): { concurrency?: number; rate?: { limit: number; periodSeconds: number; burst: number } } => ({
    ...(pool?.concurrency === undefined ? {} : { concurrency: pool.concurrency }),
    ...(pool?.rate === undefined
      ? {}
      : { rate: { limit: pool.rate.limit, periodSeconds: pool.rate.periodMs / 1000, burst: pool.rate.permits } }),
  });
  return {
    ...plain(limits.kind),
    ...(limits.perKey === undefined ? {} : { perKey: plain(limits.perKey), keyed: true }),
  };
}
