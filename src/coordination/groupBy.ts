import { parse as parseCsv } from "csv-parse/sync";
import { groupByParamsSchema, groupByPartialSchema } from "./groupBySchema";
import type { GroupByParams, GroupByPartial } from "./groupByTypes";
import { defineTaskKind, ItemError } from "./taskKinds";

export type { GroupByParams, GroupByPartial } from "./groupByTypes";

/**
 * Most characters of a group's key: an item with a longer one fails alone, with the reason. A job's aggregate holds
 * every distinct key (up to MAX_AGGREGATE_GROUPS of them), and the job's document is bounded in bytes
 * (MAX_JOB_DOCUMENT_BYTES): a key as long as an input blob (megabytes) is not a group, it is a mistake in `keyField`.
 */
export const MAX_GROUP_KEY_LENGTH = 1024;

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
export const groupByKind = defineTaskKind<GroupByParams, GroupByPartial>({
  name: "group-by",
  params: groupByParamsSchema,
  process: (input, { params }) => groupRecords(input.text, params),
  aggregate: { schema: groupByPartialSchema, empty: () => [], merge: mergeGroups, view: groupByView },
});

/**
 * One input's groups: its records (CSV with a header row, or NDJSON) grouped by `keyField`, with the count, exact sum,
 * min and max of `valueField`. @throws ItemError naming the record when the input is unusable.
 */
export function groupRecords(text: string, params: GroupByParams): GroupByPartial {
  const groups = new Map<string, [number, bigint, number, number]>();
  forEachRecord(text, params.format, (line, record) => {
    const key = record[params.keyField];
    const raw = record[params.valueField];
    if (typeof key !== "string" && typeof key !== "number")
      throw new ItemError(`record ${line}: field "${params.keyField}" is missing or not a string/number`);
    const value =
      typeof raw === "number" ? raw : typeof raw === "string" && raw.trim() !== "" ? Number(raw) : Number.NaN;
    if (!Number.isFinite(value))
      throw new ItemError(`record ${line}: field "${params.valueField}" is not a number (${JSON.stringify(raw)})`);
    if (Math.abs(value) > MAX_ABS_VALUE)
      throw new ItemError(
        `record ${line}: value ${value} is out of range (allowed: -${MAX_ABS_VALUE} to ${MAX_ABS_VALUE})`,
      );
    const name = String(key);
    if (name.length > MAX_GROUP_KEY_LENGTH)
      throw new ItemError(
        `record ${line}: the group key in field "${params.keyField}" has ${name.length} characters; a group key may have at most ${MAX_GROUP_KEY_LENGTH}`,
      );
    const micros = BigInt(Math.round(value * 1e6));
    const current = groups.get(name);
    groups.set(
      name,
      current
        ? [current[0] + 1, current[1] + micros, Math.min(current[2], value), Math.max(current[3], value)]
        : [1, micros, value, value],
    );
  });
  return [...groups]
    .map(([key, [count, sum, min, max]]): GroupByPartial[number] => [key, count, sum.toString(), min, max])
    .sort(byKey);
}

/** Merges two group-by partials: associative and commutative, `[]` its identity. */
export function mergeGroups(a: GroupByPartial, b: GroupByPartial): GroupByPartial {
  if (isSortedByKey(a) && isSortedByKey(b)) return mergeSorted(a, b);
  const merged = new Map<string, GroupByPartial[number]>();
  for (const tuple of [...a, ...b]) {
    const [key, count, sum, min, max] = tuple;
    const current = merged.get(key);
    merged.set(
      key,
      current
        ? [
            key,
            current[1] + count,
            (BigInt(current[2]) + BigInt(sum)).toString(),
            Math.min(current[3], min),
            Math.max(current[4], max),
          ]
        : tuple,
    );
  }
  return [...merged.values()].sort(byKey);
}

/** The aggregate as users read it: `{ key: { count, sum, min, max } }` (own properties only, safe for any key). */
export function groupByView(partial: GroupByPartial): Record<string, GroupStats> {
  return Object.fromEntries(
    partial.map(([key, count, sum, min, max]) => [key, { count, sum: Number(BigInt(sum)) / 1e6, min, max }]),
  );
}

function byKey(a: readonly [string, ...unknown[]], b: readonly [string, ...unknown[]]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

/** Whether keys strictly increase (sorted, each key once): what `process` and `merge` produce. */
function isSortedByKey(partial: GroupByPartial): boolean {
  for (let index = 1; index < partial.length; index++)
    if (!((partial[index - 1] as GroupByPartial[number])[0] < (partial[index] as GroupByPartial[number])[0]))
      return false;
  return true;
}

/**
 * Merges two partials sorted by key in one linear pass (no map, no sort): a batch into a large aggregate stays cheap.
 */
function mergeSorted(a: GroupByPartial, b: GroupByPartial): GroupByPartial {
  const merged: GroupByPartial = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i] as GroupByPartial[number];
    const y = b[j] as GroupByPartial[number];
    if (x[0] < y[0]) {
      merged.push(x);
      i++;
    } else if (y[0] < x[0]) {
      merged.push(y);
      j++;
    } else {
      merged.push([
        x[0],
        x[1] + y[1],
        (BigInt(x[2]) + BigInt(y[2])).toString(),
        Math.min(x[3], y[3]),
        Math.max(x[4], y[4]),
      ]);
      i++;
      j++;
    }
  }
  for (; i < a.length; i++) merged.push(a[i] as GroupByPartial[number]);
  for (; j < b.length; j++) merged.push(b[j] as GroupByPartial[number]);
  return merged;
}

/**
 * Calls `visit` with each record and its number, one record at a time: no array of every record (or line) is built, so
 * an input costs little more memory than its text (an array of parsed CSV records took about 20 times the input's
 * size). Record values are strings (CSV) or JSON values (NDJSON). An `ItemError` from `visit` ends the parse.
 */
function forEachRecord(
  input: string,
  format: GroupByParams["format"],
  visit: (line: number, record: Record<string, unknown>) => void,
): void {
  if (format === "csv") {
    let line = 1;
    try {
      parseCsv<Record<string, string>>(input, {
        columns: true,
        skip_empty_lines: true,
        trim: true,
        // Each record is visited as it is parsed and not kept (null skips it from the result).
        on_record: (record: Record<string, string>) => {
          visit(++line, record);
          return null;
        },
      });
    } catch (error) {
      if (error instanceof ItemError) throw error; // from `visit`, not the parser
      throw new ItemError(
        `input is not valid CSV with a header row: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    return;
  }
  let line = 0;
  for (let start = 0; start <= input.length;) {
    const newline = input.indexOf("\n", start);
    const end = newline === -1 ? input.length : newline;
    // Lines end with LF or CRLF.
    const text = input.slice(start, newline !== -1 && input[end - 1] === "\r" ? end - 1 : end);
    start = end + 1;
    line++;
    if (text.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw new ItemError(`line ${line} is not valid JSON`);
    }
    if (typeof value !== "object" || value === null || Array.isArray(value))
      throw new ItemError(`line ${line} is not a JSON object`);
    visit(line, value as Record<string, unknown>);
  }
}
