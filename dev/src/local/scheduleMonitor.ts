import { CronExpressionParser } from "cron-parser";

/**
 * The timer's schedule monitor, as the WebJobs SDK's timer extension keeps it (its ScheduleMonitor and TimerListener;
 * measured against the real extension by `npm run conformance:host`). A monitored timer has a status — when it last
 * ran, when it runs next — stored in host storage (`scheduleStatusBlob.ts`); when its listener starts (on the instance
 * that took the listener lock) and the stored next occurrence has passed, the missed occurrence runs at once with
 * `isPastDue` true. A schedule that fires more than once a minute is not monitored, nor one with `useMonitor: false`.
 * This module is the rules, without storage.
 */

/** Occurrences of a timer's schedule (`timerTrigger.ts` parses one). */
export interface Schedule {
  /** The first occurrence strictly after `after`. */
  next(after: Date): Date;
  /** A TimeSpan schedule's fixed interval, ms; undefined for NCRONTAB. */
  readonly intervalMs?: number;
}

/** A timer's schedule status (the SDK's ScheduleStatus). */
export interface ScheduleStatus {
  /** The last invocation (adjusted to its occurrence), or {@link NEVER}. */
  last: Date;
  /** The next occurrence. */
  next: Date;
  /** When `next` was last computed, or {@link NEVER}. */
  lastUpdated: Date;
}

/** .NET's DateTime.MinValue: what the SDK stores for "never". */
export const NEVER = new Date("0001-01-01T00:00:00Z");

const MINUTE_MS = 60_000;

/**
 * Whether the SDK monitors this schedule: not with `useMonitor: false`; not for a TimeSpan under a minute; not for
 * an NCRONTAB schedule whose minute-and-larger fields are all wildcards and which fires more than once in the minute
 * after `now` (`*\/5 * * * * *`). Everything else — `0 * * * * *`, a daily time, `*\/5 * 8 * * *` — is monitored.
 */
export function monitorsSchedule(
  expression: string,
  schedule: Schedule,
  options: { useMonitor?: unknown; timeZone: string; now: Date },
): boolean {
  if (options.useMonitor === false) return false;
  if (schedule.intervalMs !== undefined) return schedule.intervalMs >= MINUTE_MS;
  const text = expression.trim();
  // Five fields have no seconds: at most once a minute.
  if (text.split(/\s+/).length === 5) return true;
  const fields = CronExpressionParser.parse(text, { tz: options.timeZone }).fields;
  const everyMinute =
    fields.minute.values.length === 60 &&
    fields.hour.values.length === 24 &&
    fields.dayOfMonth.values.length === 31 &&
    fields.month.values.length === 12 &&
    new Set(fields.dayOfWeek.values.map((day) => Number(day) % 7)).size === 7;
  if (!everyMinute) return true;
  const endMs = options.now.getTime() + MINUTE_MS;
  const first = schedule.next(options.now);
  return !(first.getTime() < endMs && schedule.next(first).getTime() < endMs);
}

/** What {@link checkPastDue} found. */
export interface PastDueCheck {
  /** How long ago the recorded next occurrence passed, ms; 0 when it has not. */
  pastDueMs: number;
  /** The status the listener carries on with (and hands the function). */
  status: ScheduleStatus;
  /** A status to store now (a first start, or a changed schedule); undefined when the stored one stands. */
  write: ScheduleStatus | undefined;
}

/**
 * The SDK's past-due check at a listener's start (ScheduleMonitor.CheckPastDueAsync): without a stored status it
 * stores one whose next occurrence counts from `now`, and nothing is past due; with one, the next occurrence expected
 * from its `last` (or `lastUpdated`) must match the stored `next` — else the schedule changed, and the status is
 * reset (from `now` if the expected occurrence has passed, so a schedule change is not taken for a missed run).
 * Past due when `now` is after the recorded next occurrence.
 */
export function checkPastDue(stored: ScheduleStatus | undefined, now: Date, schedule: Schedule): PastDueCheck {
  if (stored === undefined) {
    const next = schedule.next(now);
    // The listener's own status starts blank; what it stores says when `next` was computed.
    return {
      pastDueMs: 0,
      status: { last: NEVER, next, lastUpdated: NEVER },
      write: { last: NEVER, next, lastUpdated: now },
    };
  }
  const never = (date: Date): boolean => date.getTime() === NEVER.getTime();
  const from = !never(stored.last) ? stored.last : !never(stored.lastUpdated) ? stored.lastUpdated : now;
  let expected = schedule.next(from);
  let status = stored;
  let write: ScheduleStatus | undefined;
  if (stored.next.getTime() !== expected.getTime()) {
    let lastUpdated = from;
    if (now.getTime() > expected.getTime()) {
      expected = schedule.next(now);
      lastUpdated = now;
    }
    status = { last: NEVER, next: expected, lastUpdated };
    write = status;
  }
  return { pastDueMs: Math.max(0, now.getTime() - status.next.getTime()), status, write };
}

/** A date as .NET's JSON writes a DateTime (`2026-05-01T12:00:00+00:00`, fractions without trailing zeros). */
export function dotnetDate(date: Date): string {
  return date
    .toISOString()
    .replace(/\.?0+Z$/, "Z")
    .replace(/Z$/, "+00:00");
}

/** The status as the SDK stores it (and hands it to a function): `{ "Last", "Next", "LastUpdated" }`. */
export function statusJson(status: ScheduleStatus): { Last: string; Next: string; LastUpdated: string } {
  return { Last: dotnetDate(status.last), Next: dotnetDate(status.next), LastUpdated: dotnetDate(status.lastUpdated) };
}

/** Reads a stored status; undefined when it is not one (a corrupt blob is treated as none, as a fresh start). */
export function parseStatusJson(text: string): ScheduleStatus | undefined {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof json !== "object" || json === null) return undefined;
  const { Last, Next, LastUpdated } = json as Record<string, unknown>;
  const dates = [Last, Next, LastUpdated].map((value) => (typeof value === "string" ? new Date(value) : undefined));
  const [last, next, lastUpdated] = dates;
  if (last === undefined || next === undefined || lastUpdated === undefined) return undefined;
  if (dates.some((date) => date === undefined || Number.isNaN(date.getTime()))) return undefined;
  return { last, next, lastUpdated };
}
