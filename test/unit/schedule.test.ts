import { CronExpressionParser } from "cron-parser";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseNcrontab, type ScheduleParse } from "../../src/app/schedule";

/**
 * The shortest interval of COORDINATOR_SCHEDULE as it was computed before the firings were enumerated from
 * cron-parser's field sets (src/app/schedule.ts at 84923fb): cron-parser iterated (its "or" of both day fields when
 * both are restricted), filtered to days matching both, the first 1,000 firings after 2026-01-01T00:00:00Z within
 * eight years.
 * Errors thrown while parsing or iterating refuse the schedule. Takes the numeric form (names already replaced).
 */
function iteratedByCronParser(numeric: string): { shortestIntervalMs: number } | { reason: string } {
  const reference = new Date("2026-01-01T00:00:00Z");
  const end = reference.getTime() + 8 * 366 * 86_400_000;
  const firings: number[] = [];
  try {
    const expression = CronExpressionParser.parse(numeric, { currentDate: reference, tz: "UTC" });
    const days = new Set(expression.fields.dayOfMonth.values.map(Number));
    const weekdays = new Set(expression.fields.dayOfWeek.values.map((day) => Number(day) % 7));
    while (firings.length < 1000 && expression.hasNext()) {
      const at = expression.next().toDate();
      if (at.getTime() > end) break;
      if (days.has(at.getUTCDate()) && weekdays.has(at.getUTCDay())) firings.push(at.getTime());
    }
  } catch (error) {
    return { reason: `is not a schedule the host can run: ${error instanceof Error ? error.message : String(error)}` };
  }
  if (firings.length < 2) return { reason: "never fires (or fires at most once in eight years)" };
  let shortestIntervalMs = Number.POSITIVE_INFINITY;
  for (let index = 1; index < firings.length; index++)
    shortestIntervalMs = Math.min(shortestIntervalMs, (firings[index] as number) - (firings[index - 1] as number));
  return { shortestIntervalMs };
}

function asOutcome(parsed: ScheduleParse): { shortestIntervalMs: number } | { reason: string } {
  return parsed.ok ? { shortestIntervalMs: parsed.schedule.shortestIntervalMs } : { reason: parsed.reason };
}

/**
 * One item of a field within [min, max]: `*`, `*` with a step `/n`, a value, a range `a-b` (now and then reversed,
 * which cron-parser refuses), or a range with a step.
 */
function itemOf(min: number, max: number): fc.Arbitrary<string> {
  const value = fc.integer({ min, max });
  const step = fc.integer({ min: 1, max: Math.max(1, max - min + 2) });
  return fc.oneof(
    fc.constant("*"),
    step.map((n) => `*/${n}`),
    value.map(String),
    fc.tuple(value, value).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
    fc.tuple(value, value, step).map(([a, b, n]) => `${Math.min(a, b)}-${Math.max(a, b)}/${n}`),
    { arbitrary: fc.tuple(value, value).map(([a, b]) => `${Math.max(a, b)}-${Math.min(a, b)}`), weight: 1 },
  );
}

/** A list of 2 to `most` distinct values (a list with a value twice is refused, which the other items cover). */
function valuesOf(min: number, max: number, most: number): fc.Arbitrary<string> {
  return fc
    .uniqueArray(fc.integer({ min, max }), { minLength: 2, maxLength: most })
    .map((values) => values.sort((a, b) => a - b).join(","));
}

function fieldOf(min: number, max: number): fc.Arbitrary<string> {
  return fc.oneof(itemOf(min, max), valuesOf(min, max, 4));
}

/**
 * Six-field expressions, numeric. Sparse day fields come often, so schedules that fire rarely — a leap day, the 13th on
 * a Friday, a day that no month has — are generated as well as dense ones. When both day fields are restricted, the
 * old iteration walks every day either field matches and keeps those both match, so the time fields stay sparse there
 * (one second, one minute, at most three hours): dense ones would take it minutes.
 */
const expression = fc
  .tuple(
    fc.oneof(fieldOf(1, 31), fc.constant("*"), fc.constantFrom("29", "30", "31", "13")),
    fc.oneof(fieldOf(1, 12), fc.constant("*"), fc.constantFrom("2", "4,6,9,11")),
    fc.oneof(fieldOf(0, 6), fc.constant("*"), fc.constantFrom("5", "1", "0")),
  )
  .chain(([days, months, weekdays]) => {
    const bothDays = days !== "*" && weekdays !== "*";
    const one = (min: number, max: number) => fc.integer({ min, max }).map(String);
    const time = bothDays
      ? fc.tuple(one(0, 59), one(0, 59), fc.oneof(one(0, 23), valuesOf(0, 23, 3)))
      : fc.tuple(
          fc.oneof(fieldOf(0, 59), fc.constant("0")),
          fc.oneof(fieldOf(0, 59), fc.constant("0"), fc.constant("*")),
          fc.oneof(fieldOf(0, 23), fc.constant("*")),
        );
    return time.map(([seconds, minutes, hours]) => `${seconds} ${minutes} ${hours} ${days} ${months} ${weekdays}`);
  });

describe("COORDINATOR_SCHEDULE's shortest interval", () => {
  it(
    "is what iterating cron-parser gave, for any six-field expression (or the same refusal)",
    { timeout: 180_000 },
    () => {
      fc.assert(
        fc.property(expression, (text) => {
          expect(asOutcome(parseNcrontab(text))).toEqual(iteratedByCronParser(text));
        }),
        { numRuns: 100 },
      );
    },
  );

  it.each([
    ["0 * * * * *", 60_000],
    ["*/5 * * * * *", 5000],
    ["0 0,1 * * * *", 60_000],
    ["0 0 0 29 2 *", 4 * 365 * 86_400_000 + 86_400_000],
    ["0 0 0 13 * 5", iteratedByCronParser("0 0 0 13 * 5")],
    ["0 0 0 31 4,6 *", iteratedByCronParser("0 0 0 31 4,6 *")],
    ["0 0 0 29 2 1", iteratedByCronParser("0 0 0 29 2 1")],
    // New Year's Day on a Thursday: 2026 (the reference itself, not counted), then 2032 alone within eight years.
    ["0 0 0 1 1 4", { reason: "never fires (or fires at most once in eight years)" }],
  ])("%s: the same as iterating cron-parser", (text, expected) => {
    const wanted = typeof expected === "number" ? { shortestIntervalMs: expected } : expected;
    expect(asOutcome(parseNcrontab(text))).toEqual(wanted);
  });
});
