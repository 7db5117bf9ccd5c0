import { parse as parseCsv } from "csv-parse/sync";
import { z } from "zod";
import { ItemError, type TaskKind } from "./taskKinds";

/** Parameters of a group-by job. */
export const groupByParamsSchema = z.strictObject({
  /** How each item's records are written. */
  format: z.enum(["csv", "ndjson"]),
  /** Field whose value names the group. */
  keyField: z.string().min(1).max(256),
  /** Numeric field aggregated per group. */
  valueField: z.string().min(1).max(256),
});
export type GroupByParams = z.infer<typeof groupByParamsSchema>;

/**
 * Per-group statistics: `[key, count, sumMicros, min, max]`, sorted by key. Kept as tuples, not an object keyed by
 * group, so keys like `__proto__` are plain data; the sum is an exact integer of millionths (a decimal string), so
 * merging is exactly associative — float addition is not.
 */
const groupTuple = z.tuple([z.string(), z.number().int().min(0), z.string().regex(/^-?\d+$/), z.number(), z.number()]);
export const groupByPartialSchema = z.array(groupTuple);
export type GroupByPartial = z.infer<typeof groupByPartialSchema>;

/** Largest magnitude accepted for a value: beyond it sums of millionths stop being meaningful. */
export const MAX_ABS_VALUE = 1e12;

/** The group-by aggregate as users read it. */
export interface GroupStats {
  count: number;
  sum: number;
  min: number;
  max: number;
}

/** Built-in task kind: count, sum, min and max of a numeric field per key, over CSV or NDJSON records. */
export const groupByKind: TaskKind<GroupByParams, GroupByPartial> = {
  name: "group-by",
  paramsSchema: groupByParamsSchema,
  partialSchema: groupByPartialSchema,
  process(input, params) {
    const groups = new Map<string, [number, bigint, number, number]>();
    for (const [line, record] of readRecords(input, params.format)) {
      const key = record[params.keyField];
      const raw = record[params.valueField];
      if (typeof key !== "string" && typeof key !== "number") throw new ItemError(`record ${line}: field "${params.keyField}" is missing or not a string/number`);
      const value = typeof raw === "number" ? raw : typeof raw === "string" && raw.trim() !== "" ? Number(raw) : Number.NaN;
      if (!Number.isFinite(value)) throw new ItemError(`record ${line}: field "${params.valueField}" is not a number (${JSON.stringify(raw)})`);
      if (Math.abs(value) > MAX_ABS_VALUE) throw new ItemError(`record ${line}: value ${value} is out of range (allowed: -${MAX_ABS_VALUE} to ${MAX_ABS_VALUE})`);
      const name = String(key);
      const micros = BigInt(Math.round(value * 1e6));
      const current = groups.get(name);
      groups.set(name, current ? [current[0] + 1, current[1] + micros, Math.min(current[2], value), Math.max(current[3], value)] : [1, micros, value, value]);
    }
    return [...groups].map(([key, [count, sum, min, max]]): GroupByPartial[number] => [key, count, sum.toString(), min, max]).sort(byKey);
  },
  merge(a, b) {
    const merged = new Map<string, GroupByPartial[number]>();
    for (const tuple of [...a, ...b]) {
      const [key, count, sum, min, max] = tuple;
      const current = merged.get(key);
      merged.set(key, current ? [key, current[1] + count, (BigInt(current[2]) + BigInt(sum)).toString(), Math.min(current[3], min), Math.max(current[4], max)] : tuple);
    }
    return [...merged.values()].sort(byKey);
  },
  empty: () => [],
  view: (partial) => groupByView(partial),
};

/** The aggregate as users read it: `{ key: { count, sum, min, max } }` (own properties only, safe for any key). */
export function groupByView(partial: GroupByPartial): Record<string, GroupStats> {
  return Object.fromEntries(partial.map(([key, count, sum, min, max]) => [key, { count, sum: Number(BigInt(sum)) / 1e6, min, max }]));
}

function byKey(a: readonly [string, ...unknown[]], b: readonly [string, ...unknown[]]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

/** Yields `[record number, record]` pairs; record values are strings (CSV) or JSON values (NDJSON). */
function* readRecords(input: string, format: GroupByParams["format"]): Generator<[number, Record<string, unknown>]> {
  if (format === "csv") {
    let rows: Record<string, string>[];
    try {
      rows = parseCsv<Record<string, string>>(input, { columns: true, skip_empty_lines: true, trim: true });
    } catch (error) {
      throw new ItemError(`input is not valid CSV with a header row: ${error instanceof Error ? error.message : String(error)}`);
    }
    let line = 1;
    for (const row of rows) yield [++line, row];
    return;
  }
  let line = 0;
  for (const text of input.split(/\r?\n/)) {
    line++;
    if (text.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new ItemError(`line ${line} is not valid JSON`);
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ItemError(`line ${line} is not a JSON object`);
    yield [line, value as Record<string, unknown>];
  }
}
