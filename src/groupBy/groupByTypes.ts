/**
 * The group-by kind's types: its params and its partial (the aggregate). The kind (`groupBy.ts`) works on them and
 * the schemas (`groupBySchema.ts`) validate them; both import them from here.
 */

/** Parameters of a group-by job. */
export interface GroupByParams {
  /** How each item's records are written. */
  format: "csv" | "ndjson";
  /** Field whose value names the group (1–256 characters). */
  keyField: string;
  /** Numeric field aggregated per group (1–256 characters). */
  valueField: string;
}

/**
 * Per-group statistics: `[key, count, sumMicros, min, max]`, sorted by key. Kept as tuples, not an object keyed by
 * group, so keys like `__proto__` are plain data; the sum is an exact integer of millionths (a decimal string), so
 * merging is exactly associative — float addition is not.
 */
export type GroupByPartial = [key: string, count: number, sumMicros: string, min: number, max: number][];
