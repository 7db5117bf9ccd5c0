import type { LimitKey, RateLimit, TaskLimits } from "./taskKinds.js";

/**
 * Limits as the engine holds them: checked once (a kind's when it registers, a job's when it is submitted), then
 * normalized into the numbers the leader grants and the worker enforces. The rules and their messages live here, so
 * a kind's limits and a submission's say the same thing.
 */

/** Most items at once a concurrency limit may allow. */
export const MAX_LIMIT_CONCURRENCY = 10_000;
/** Most starts per period a rate limit may allow. */
export const MAX_RATE_LIMIT = 100_000;
/** Longest period of a rate limit, in seconds: a day. */
export const MAX_RATE_PERIOD_S = 86_400;
/** Longest key a kind's `key` may return, in characters (and at most 4 bytes each in UTF-8). */
export const MAX_LIMIT_KEY_CHARS = 128;

/**
 * A rate limit as the leader grants it: `permits` starts that may each be used once per `windowMs`. A unit holding `r`
 * of them starts at most `r` items in any window of `windowMs`; `permits × ⌈periodMs ÷ windowMs⌉` never passes `limit`
 * (`windowMs` = `periodMs ÷ ⌊limit ÷ burst⌋`), so every window of the period holds at most `limit` starts.
 */
export type RatePool = {
  limit: number;
  periodMs: number;
  permits: number;
  windowMs: number;
};

/** One pool's limit: items running at once, starts per period, or both. */
export type PoolLimit = {
  concurrency?: number;
  rate?: RatePool;
};

/** A kind's limits, normalized: the kind as a whole, and per key with the key function. */
export interface KindLimits {
  kind?: PoolLimit;
  perKey?: PoolLimit;
  key?: LimitKey<unknown>;
}

/** A problem with a limit: the field (`limits.rate.limit`) and what is wrong with it and what is allowed. */
export interface LimitProblem {
  field: string;
  message: string;
}

/** The problems as one line per field: what a kind's registration error says. */
export function problemsText(problems: readonly LimitProblem[]): string[] {
  return problems.map(({ field, message }) => `${field} ${message}`);
}

/** A whole number field's problem, if any. */
function wholeNumber(field: string, value: unknown, min: number, max: number): LimitProblem[] {
  if (typeof value === "number" && Number.isInteger(value) && value >= min && value <= max) return [];
  return [
    {
      field,
      message: `must be a whole number from ${min} to ${max.toLocaleString("en-US")}; it is ${describe(value)}`,
    },
  ];
}

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.slice(0, 40));
  if (typeof value === "number" || typeof value === "boolean" || value === null || value === undefined)
    return String(value);
  return Array.isArray(value) ? "an array" : typeof value;
}

/** Fields an object has that it may not have. */
function unknownFields(field: string, value: Record<string, unknown>, allowed: readonly string[]): LimitProblem[] {
  const unknown = Object.keys(value).filter((key) => !allowed.includes(key));
  if (unknown.length === 0) return [];
  return [{ field, message: `has unknown field(s) ${unknown.join(", ")}; it may have ${allowed.join(", ")}` }];
}

/** The problems of a rate limit under `field` (`limits.rate`); none for a good one. */
export function rateProblems(field: string, value: unknown): LimitProblem[] {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return [
      {
        field,
        message: `must be { limit, periodSeconds, burst? } (limit 1–${MAX_RATE_LIMIT.toLocaleString("en-US")} starts per periodSeconds 1–${MAX_RATE_PERIOD_S.toLocaleString("en-US")}); it is ${describe(value)}`,
      },
    ];
  const rate = value as Record<string, unknown>;
  const problems = [
    ...wholeNumber(`${field}.limit`, rate.limit, 1, MAX_RATE_LIMIT),
    ...wholeNumber(`${field}.periodSeconds`, rate.periodSeconds, 1, MAX_RATE_PERIOD_S),
  ];
  if (rate.burst !== undefined) {
    const limit = typeof rate.limit === "number" && Number.isInteger(rate.limit) ? rate.limit : MAX_RATE_LIMIT;
    problems.push(...wholeNumber(`${field}.burst`, rate.burst, 1, Math.max(1, Math.min(limit, MAX_RATE_LIMIT))));
  }
  return [...problems, ...unknownFields(field, rate, ["limit", "periodSeconds", "burst"])];
}

/** The problems of one pool's limits (`{ concurrency?, rate? }`) under `field`; none for good ones. */
export function poolProblems(field: string, value: unknown, extra: readonly string[] = []): LimitProblem[] {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return [{ field, message: `must be an object with concurrency and/or rate; it is ${describe(value)}` }];
  const pool = value as Record<string, unknown>;
  const problems: LimitProblem[] = [];
  if (pool.concurrency !== undefined)
    problems.push(...wholeNumber(`${field}.concurrency`, pool.concurrency, 1, MAX_LIMIT_CONCURRENCY));
  if (pool.rate !== undefined) problems.push(...rateProblems(`${field}.rate`, pool.rate));
  return [...problems, ...unknownFields(field, pool, ["concurrency", "rate", ...extra])];
}

/** The problems of a kind's {@link TaskLimits}; none for good ones. */
export function kindLimitsProblems(limits: unknown): LimitProblem[] {
  if (limits === undefined) return [];
  const problems = poolProblems("limits", limits, ["key", "perKey"]);
  if (typeof limits !== "object" || limits === null || Array.isArray(limits)) return problems;
  const { key, perKey } = limits as Record<string, unknown>;
  if (key !== undefined && typeof key !== "function")
    problems.push({ field: "limits.key", message: "must be a function (item, params) => string" });
  if (perKey !== undefined) {
    problems.push(...poolProblems("limits.perKey", perKey));
    if (key === undefined)
      problems.push({ field: "limits.perKey", message: "needs limits.key: the function that gives an item its key" });
  }
  return problems;
}

/** A checked rate limit as the leader grants it. */
export function ratePoolOf(rate: RateLimit): RatePool {
  const burst = rate.burst ?? rate.limit;
  const periodMs = rate.periodSeconds * 1000;
  return { limit: rate.limit, periodMs, permits: burst, windowMs: periodMs / Math.floor(rate.limit / burst) };
}

/** A checked pool limit, normalized; undefined when it limits nothing. */
export function poolLimitOf(limits: { concurrency?: number; rate?: RateLimit } | undefined): PoolLimit | undefined {
  if (limits === undefined || (limits.concurrency === undefined && limits.rate === undefined)) return undefined;
  return {
    ...(limits.concurrency === undefined ? {} : { concurrency: limits.concurrency }),
    ...(limits.rate === undefined ? {} : { rate: ratePoolOf(limits.rate) }),
  };
}

/** A kind's checked limits, normalized; undefined when it has none. */
export function kindLimitsOf(limits: TaskLimits | undefined): KindLimits | undefined {
  if (limits === undefined) return undefined;
  const kind = poolLimitOf(limits);
  const perKey = poolLimitOf(limits.perKey);
  if (kind === undefined && perKey === undefined) return undefined;
  return {
    ...(kind === undefined ? {} : { kind }),
    ...(perKey === undefined || limits.key === undefined ? {} : { perKey, key: limits.key }),
  };
}
