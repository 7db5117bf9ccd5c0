import fc from "fast-check";
import type { RateLimit, TaskLimits } from "../../src/coordination/kinds/taskKinds";
import type { FaultKind } from "./plan";

/**
 * Issue 42's model: kinds with global limits and jobs with their own, so every fault meets flow control. The limits
 * are small (1–4 items at once, 1–6 starts per 1–3 s), so they bind on jobs of up to 16 items: the kinds' limits as
 * every process's code declares them (`sim-sum` and `group-by` each, kind-wide and per key), and a job's own limits
 * on its submission. Kept in one field of the plan, `limits`, generated after every earlier field.
 */
export interface LimitsPlan {
  /** The limits of each simulated kind as its code declares them (null: none), by kind name. */
  kinds: { "sim-sum": SimKindLimits | null; "group-by": SimKindLimits | null };
  /** Per job of the plan (by index; a burst's jobs have none of their own): its own limits (null: none). */
  jobs: (SimPoolLimits | null)[];
}

/** One pool's limits: items at once, starts per period, or both. */
export interface SimPoolLimits {
  concurrency?: number;
  rate?: RateLimit;
}

/** A kind's limits: kind-wide, and per key (the key is {@link simLimitKey}). */
export interface SimKindLimits extends SimPoolLimits {
  perKey?: SimPoolLimits;
}

/** The fault (in `--faults`) that switches the model on. */
export const LIMIT_FAULTS = ["limits"] as const;

const rateArb: fc.Arbitrary<RateLimit> = fc
  .record({ limit: fc.integer({ min: 1, max: 6 }), periodSeconds: fc.integer({ min: 1, max: 3 }), cut: fc.nat(5) })
  // A burst below the limit one time in two (then starts spread over the period in windows of its own).
  .map(({ limit, periodSeconds, cut }) =>
    cut % 2 === 0 || limit === 1 ? { limit, periodSeconds } : { limit, periodSeconds, burst: 1 + (cut % limit) },
  );

const poolArb: fc.Arbitrary<SimPoolLimits> = fc
  .record({ concurrency: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }), rate: fc.option(rateArb) })
  .map(({ concurrency, rate }) => ({
    // Never neither: a pool limits something.
    ...(concurrency === undefined && rate === null ? { concurrency: 2 } : {}),
    ...(concurrency === undefined ? {} : { concurrency }),
    ...(rate === null ? {} : { rate }),
  }));

const kindArb: fc.Arbitrary<SimKindLimits> = fc
  .record({ pool: fc.option(poolArb), perKey: fc.option(poolArb) })
  .map(({ pool, perKey }) => ({
    ...(pool ?? (perKey === null ? { concurrency: 3 } : {})),
    ...(perKey === null ? {} : { perKey }),
  }));

/** The arbitrary of the model, with only the faults in `faults`. */
export function limitsArb(faults: ReadonlySet<FaultKind>): fc.Arbitrary<LimitsPlan> {
  if (!faults.has("limits")) return fc.constant({ kinds: { "sim-sum": null, "group-by": null }, jobs: [] });
  return fc.record({
    kinds: fc.record({
      "sim-sum": fc.option(kindArb, { freq: 3 }),
      "group-by": fc.option(kindArb, { freq: 3 }),
    }),
    jobs: fc.array(fc.option(poolArb, { freq: 2 }), { minLength: 3, maxLength: 3 }),
  });
}

/**
 * The key of an item under a simulated kind's per-key limits, from the item as stored (as the leader sees it): a
 * `sim-sum` number by its value modulo 3, a `group-by` record by its key field, a blob item as "blob", anything else
 * by its first characters. Synchronous and the same for the same item, as the kind's `key` must be.
 */
export function simLimitKey(item: { text: string | undefined; blob: string | undefined }): string {
  const { text } = item;
  if (text === undefined) return "blob";
  if (/^-?\d+ *$/.test(text)) return `n${Math.abs(Number.parseInt(text, 10)) % 3}`;
  try {
    const record: unknown = JSON.parse(text);
    if (typeof record === "object" && record !== null && "k" in record && typeof record.k === "string")
      return `k-${record.k}`;
  } catch {
    // not JSON: keyed by its first characters below
  }
  return text.slice(0, 8) || "empty";
}

/** A simulated kind's limits as its code declares them (undefined: none). */
export function taskLimitsOf(limits: SimKindLimits | null): TaskLimits | undefined {
  if (limits === null) return undefined;
  const { perKey, ...pool } = limits;
  return perKey === undefined ? pool : { ...pool, key: simLimitKey, perKey };
}
