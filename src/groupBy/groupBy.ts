import { forEachCsvRecord } from "./csvRecords.js";
import { groupByParamsSchema, groupByPartialSchema } from "./groupBySchema.js";
import type { GroupByParams, GroupByPartial } from "./groupByTypes.js";
import { defineTaskKind, ItemError } from "../coordination/kinds/taskKinds.js";

export type { GroupByParams, GroupByPartial } from "./groupByTypes.js";

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
export const groupByKind = defineTaskKind<GroupByParams, GroupByPartial, Record<string, GroupStats>>({
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
  const groups = new Map<string, GroupSums>();
  forEachRecord(text, params, (line, key, raw) => {
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
    const micros = Math.round(value * 1e6);
    const group = groups.get(name);
    if (group === undefined) groups.set(name, new GroupSums(micros, value));
    else group.add(micros, value);
  });
  return [...groups]
    .map(([key, group]): GroupByPartial[number] => [key, group.count, group.sumText(), group.min, group.max])
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
        ? [key, current[1] + count, addMicros(current[2], sum), Math.min(current[3], min), Math.max(current[4], max)]
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

/**
 * One group's count, exact sum in millionths, min and max while an input is read. The sum is kept in a double while it
 * is a safe integer — exact, and far cheaper than a BigInt per record — and moves to a BigInt once it would not be.
 */
class GroupSums {
  count = 1;
  private sum: number;
  private big = 0n;

  constructor(
    micros: number,
    public min: number,
    public max = min,
  ) {
    this.sum = micros;
    if (!Number.isSafeInteger(micros)) this.spill(0);
  }

  add(micros: number, value: number): void {
    this.count++;
    this.min = Math.min(this.min, value);
    this.max = Math.max(this.max, value);
    const next = this.sum + micros;
    // A double holds a sum of safe integers exactly when the sum is itself a safe integer.
    if (Number.isSafeInteger(micros) && Number.isSafeInteger(next)) this.sum = next;
    else this.spill(micros);
  }

  /** The sum in millionths, as `GroupByPartial` writes it. */
  sumText(): string {
    return this.big === 0n ? String(this.sum) : (this.big + BigInt(this.sum)).toString();
  }

  private spill(micros: number): void {
    this.big += BigInt(this.sum) + BigInt(micros);
    this.sum = 0;
  }
}

/** Most characters of a sum that two may be added as doubles: |a|, |b| < 10^15, so |a + b| < 2^53, exact. */
const SAFE_MICROS_DIGITS = 15;

/** The sum of two sums in millionths (`GroupByPartial`'s integer strings), exactly. */
function addMicros(a: string, b: string): string {
  if (a.length <= SAFE_MICROS_DIGITS && b.length <= SAFE_MICROS_DIGITS) return String(Number(a) + Number(b));
  return (BigInt(a) + BigInt(b)).toString();
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
      merged.push([x[0], x[1] + y[1], addMicros(x[2], y[2]), Math.min(x[3], y[3]), Math.max(x[4], y[4])]);
      i++;
      j++;
    }
  }
  for (; i < a.length; i++) merged.push(a[i] as GroupByPartial[number]);
  for (; j < b.length; j++) merged.push(b[j] as GroupByPartial[number]);
  return merged;
}

/**
 * Calls `visit` with each record's number and the values of its key and value fields, one record at a time: no array
 * of every record (or line) is built, so an input costs little more memory than its text (an array of parsed CSV
 * records took about 20 times the input's size). Values are strings (CSV, ./csvRecords.ts) or JSON values (NDJSON),
 * `undefined` when the record has no such field. An `ItemError` from `visit` ends the read.
 */
function forEachRecord(
  input: string,
  params: GroupByParams,
  visit: (line: number, key: unknown, value: unknown) => void,
): void {
  if (params.format === "csv") {
    forEachCsvRecord(input, params.keyField, params.valueField, visit);
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
    const record = value as Record<string, unknown>;
    visit(line, record[params.keyField], record[params.valueField]);
  }
}
