import { CronExpressionParser } from "cron-parser";

/**
 * COORDINATOR_SCHEDULE read as the Functions host reads a timer's schedule on Flex Consumption: NCRONTAB with six
 * fields, seconds first (`{second} {minute} {hour} {day} {month} {day-of-week}`), as NCrontab parses it. Each field
 * is a list (`a,b`) of `*`, a value or a range (`a-b`), each with an optional step (`/n`); values are numbers, or for
 * months and days of the week the start of an English name (`Jan`, `Mon`, `Monday`). Days of the week run 0–6
 * (Sunday is 0), and a day must match both the day-of-month and the day-of-week field. Other cron dialects' extras
 * (`L`, `W`, `#`, `?`, `H`, `@daily`, Sunday as 7) fail the host's parse, and so fail here.
 *
 * `cron-parser` then checks the ranges and expands each field; the firings are enumerated from those values, a day
 * counting when it matches both day fields, as NCrontab reads them ({@link firingsOf}).
 */

/** A schedule the host can run. */
export interface NcrontabSchedule {
  /** The expression, trimmed. */
  expression: string;
  /** The shortest time between two consecutive firings among the next {@link MAX_FIRINGS}, in ms. */
  shortestIntervalMs: number;
}

/** The outcome of {@link parseNcrontab}: the schedule, or why the host would not run it. */
export type ScheduleParse = { ok: true; schedule: NcrontabSchedule } | { ok: false; reason: string };

/** Firings looked at for the shortest interval. */
const MAX_FIRINGS = 1000;
/** How far ahead firings are looked for: a leap day fires every four years. */
const HORIZON_MS = 8 * 366 * 86_400_000;
/** Where the firings are counted from (UTC, as the host's default time zone). */
const REFERENCE = new Date("2026-01-01T00:00:00Z");

interface Field {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
  note?: string;
}

const FIELDS: readonly Field[] = [
  { name: "second", min: 0, max: 59 },
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  {
    name: "month",
    min: 1,
    max: 12,
    names: [
      "January",
      "February",
      "March",
      "April",
      "May",
      "June",
      "July",
      "August",
      "September",
      "October",
      "November",
      "December",
    ],
  },
  {
    name: "day of week",
    min: 0,
    max: 6,
    names: ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"],
    note: " (Sunday is 0)",
  },
];

/** One list item of a field: `*`, a value or a range, with an optional step. */
const ITEM = /^(?:\*|([0-9]+|[A-Za-z]+)(?:-([0-9]+|[A-Za-z]+))?)(?:\/([0-9]+))?$/;

const SYNTAX =
  "NCRONTAB allows *, numbers, names (months and days of the week), ranges a-b, steps /n and lists a,b in a field";

const cache = new Map<string, ScheduleParse>();

/** Parses a schedule as the host would; the answer for an expression is computed once per process. */
export function parseNcrontab(raw: string): ScheduleParse {
  const expression = raw.trim();
  let parsed = cache.get(expression);
  if (parsed === undefined) {
    parsed = parse(expression);
    cache.set(expression, parsed);
  }
  return parsed;
}

function parse(expression: string): ScheduleParse {
  if (/^%[^%]+%$/.test(expression))
    return refuse(
      "is an app setting reference: %NAME% is resolved only in a function's own schedule (the coordinator's is %COORDINATOR_SCHEDULE%), not inside a setting; put the NCRONTAB expression itself here",
    );
  if (/^(\d+\.)?\d{1,2}:\d{2}(:\d{2})?$/.test(expression))
    return refuse(
      "is a TimeSpan, which the host accepts only on an App Service plan; on Flex Consumption use NCRONTAB (e.g. '0 */5 * * * *')",
    );
  const parts = expression.split(/\s+/);
  if (parts.length !== 6)
    return refuse(
      `must be an NCRONTAB expression with six fields, seconds first (e.g. '*/30 * * * * *'); got ${parts.length}`,
    );
  const numeric: string[] = [];
  for (const [index, text] of parts.entries()) {
    const field = FIELDS[index] as Field;
    const normalized = normalizeField(field, text);
    if (typeof normalized !== "string")
      return refuse(`is not NCRONTAB: field ${index + 1} (${field.name}) "${text}"${normalized.why}`);
    numeric.push(normalized);
  }
  let firings: number[];
  try {
    firings = firingsOf(numeric.join(" "));
  } catch (error) {
    return refuse(`is not a schedule the host can run: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (firings.length < 2) return refuse("never fires (or fires at most once in eight years)");
  let shortestIntervalMs = Number.POSITIVE_INFINITY;
  for (const [index, at] of firings.entries()) {
    const previous = firings[index - 1];
    if (previous !== undefined) shortestIntervalMs = Math.min(shortestIntervalMs, at - previous);
  }
  return { ok: true, schedule: { expression, shortestIntervalMs } };
}

function refuse(reason: string): ScheduleParse {
  return { ok: false, reason };
}

/** A field with names replaced by their numbers, or why NCrontab would refuse it. */
function normalizeField(field: Field, text: string): string | { why: string } {
  const items: string[] = [];
  for (const item of text.split(",")) {
    const match = ITEM.exec(item);
    if (match === null) return { why: `: ${SYNTAX}` };
    const values = [match[1], match[2]].filter((value) => value !== undefined);
    const numbers: number[] = [];
    for (const value of values) {
      const number = valueOf(field, value);
      if (typeof number !== "number") return number;
      numbers.push(number);
    }
    const step = match[3] === undefined ? "" : `/${match[3]}`;
    items.push(numbers.length === 0 ? `*${step}` : `${numbers.join("-")}${step}`);
  }
  return items.join(",");
}

/** A value's number: digits, or (months and days of the week) the first name it starts, ignoring case. */
function valueOf(field: Field, value: string): number | { why: string } {
  if (/^[0-9]+$/.test(value)) {
    const number = Number(value);
    if (number < field.min || number > field.max)
      return { why: `: ${number} is outside ${field.min}–${field.max}${field.note ?? ""}` };
    return number;
  }
  if (field.names === undefined) return { why: `: names are allowed only for months and days of the week; ${SYNTAX}` };
  const index = field.names.findIndex((name) => name.toLowerCase().startsWith(value.toLowerCase()));
  if (index < 0)
    return {
      why: ` is not the start of a ${field.name === "month" ? "month" : "day"}'s name (${field.names.join(", ")})`,
    };
  return field.min + index;
}

/**
 * The next firings from {@link REFERENCE}, up to {@link MAX_FIRINGS} or {@link HORIZON_MS}, in ms since the epoch:
 * `cron-parser` parses the expression (it refuses impossible ones, such as February 30th) and expands each field into
 * its values; the firings are enumerated from those sets in UTC arithmetic, a day counting when it is in both day
 * fields, as NCrontab reads them. Iterating `cron-parser` itself gives the same firings (`test/unit/schedule.test.ts`
 * holds the two equal) but builds date objects for every step: 0.26–0.41 s of CPU for the default schedule's thousand,
 * in every process that reads the settings — each new instance, before its first invocation.
 */
function firingsOf(numeric: string): number[] {
  const { fields } = CronExpressionParser.parse(numeric, { currentDate: REFERENCE, tz: "UTC" });
  const ascending = (values: readonly (number | string)[]): number[] =>
    [...new Set(values.map(Number))].sort((a, b) => a - b);
  const seconds = ascending(fields.second.values);
  const minutes = ascending(fields.minute.values);
  const hours = ascending(fields.hour.values);
  const days = ascending(fields.dayOfMonth.values);
  const months = ascending(fields.month.values);
  const weekdays = new Set(fields.dayOfWeek.values.map((day) => Number(day) % 7));
  const start = REFERENCE.getTime();
  const end = start + HORIZON_MS;
  const firings: number[] = [];
  for (let year = REFERENCE.getUTCFullYear(); year <= new Date(end).getUTCFullYear(); year++)
    for (const month of months)
      for (const day of days) {
        const midnight = Date.UTC(year, month - 1, day);
        const date = new Date(midnight);
        // Not a day of this month (the 31st of April), or not one of the days of the week.
        if (date.getUTCDate() !== day || !weekdays.has(date.getUTCDay())) continue;
        for (const hour of hours)
          for (const minute of minutes)
            for (const second of seconds) {
              const at = midnight + ((hour * 60 + minute) * 60 + second) * 1000;
              if (at <= start) continue;
              if (at > end) return firings;
              firings.push(at);
              if (firings.length >= MAX_FIRINGS) return firings;
            }
      }
  return firings;
}
