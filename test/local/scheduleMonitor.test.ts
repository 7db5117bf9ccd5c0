import { describe, expect, it } from "vitest";
import {
  checkPastDue,
  dotnetDate,
  monitorsSchedule,
  NEVER,
  parseStatusJson,
  statusJson,
} from "../../dev/src/local/scheduleMonitor";
import { parseSchedule } from "../../dev/src/local/timerTrigger";

/**
 * The schedule monitor's rules, ported from the WebJobs SDK's timer extension
 * (TimerSchedule.ShouldDisableScheduleMonitor and ScheduleMonitor.CheckPastDueAsync), without storage; the behaviour
 * on Azurite is timerTrigger.test.ts's, and the comparison with the real extension `npm run conformance:host`'s.
 */

const at = (iso: string): Date => new Date(iso);
const DAILY_3AM = parseSchedule("0 0 3 * * *", "f");

describe("which schedules are monitored", () => {
  const monitored = (expression: string, useMonitor?: unknown): boolean =>
    monitorsSchedule(expression, parseSchedule(expression, "f"), {
      useMonitor,
      timeZone: "UTC",
      now: at("2026-05-01T12:00:00.500Z"),
    });

  it("monitors what fires at most once a minute, not what fires more often, nor with useMonitor false", () => {
    expect(monitored("0 * * * * *")).toBe(true);
    expect(monitored("0 */5 * * * *")).toBe(true);
    expect(monitored("0 0 3 * * *")).toBe(true);
    expect(monitored("*/5 * * * * *")).toBe(false);
    expect(monitored("0,30 * * * * *")).toBe(false);
    // A restriction above the seconds makes the SDK keep the monitor, however often it fires within it.
    expect(monitored("*/5 * 8 * * *")).toBe(true);
    expect(monitored("*/5 * * * *")).toBe(true);
    expect(monitored("00:01:00")).toBe(true);
    expect(monitored("00:00:30")).toBe(false);
    expect(monitored("0 * * * * *", false)).toBe(false);
  });
});

describe("the past-due check at a listener's start", () => {
  it("without a stored status stores one counted from now, and nothing is past due", () => {
    const now = at("2026-05-01T12:00:00Z");
    const check = checkPastDue(undefined, now, DAILY_3AM);
    expect(check.pastDueMs).toBe(0);
    expect(check.write).toEqual({ last: NEVER, next: at("2026-05-02T03:00:00Z"), lastUpdated: now });
    // The listener's own status starts blank, as the SDK hands it to a first run.
    expect(check.status).toEqual({ last: NEVER, next: at("2026-05-02T03:00:00Z"), lastUpdated: NEVER });
  });

  it("is past due when the stored next occurrence has passed, and keeps the stored status", () => {
    const stored = {
      last: at("2026-04-30T03:00:00Z"),
      next: at("2026-05-01T03:00:00Z"),
      lastUpdated: at("2026-04-30T03:00:00Z"),
    };
    const check = checkPastDue(stored, at("2026-05-01T03:00:57Z"), DAILY_3AM);
    expect(check.pastDueMs).toBe(57_000);
    expect(check.status).toBe(stored);
    expect(check.write).toBeUndefined();
    expect(checkPastDue(stored, at("2026-05-01T02:59:00Z"), DAILY_3AM).pastDueMs).toBe(0);
  });

  it("takes a stored next occurrence that the schedule would not give for a changed schedule, not a missed run", () => {
    // Stored for a 4 am schedule; the schedule is now 3 am, and 3 am after Last has passed.
    const stored = {
      last: at("2026-04-30T04:00:00Z"),
      next: at("2026-05-01T04:00:00Z"),
      lastUpdated: at("2026-04-30T04:00:00Z"),
    };
    const now = at("2026-05-01T12:00:00Z");
    const check = checkPastDue(stored, now, DAILY_3AM);
    expect(check.pastDueMs).toBe(0);
    expect(check.write).toEqual({ last: NEVER, next: at("2026-05-02T03:00:00Z"), lastUpdated: now });
    // Expected from Last still ahead: kept from Last.
    const early = checkPastDue(stored, at("2026-04-30T12:00:00Z"), DAILY_3AM);
    expect(early.write).toEqual({ last: NEVER, next: at("2026-05-01T03:00:00Z"), lastUpdated: stored.last });
    expect(early.pastDueMs).toBe(0);
  });

  it("counts from LastUpdated when the timer never ran", () => {
    const stored = { last: NEVER, next: at("2026-05-01T03:00:00Z"), lastUpdated: at("2026-04-30T12:00:00Z") };
    const check = checkPastDue(stored, at("2026-05-01T03:00:10Z"), DAILY_3AM);
    expect(check.write).toBeUndefined();
    expect(check.pastDueMs).toBe(10_000);
  });
});

describe("the status as the SDK stores it", () => {
  it("writes .NET's dates (no trailing zeros, +00:00) and reads them back; anything else is no status", () => {
    const status = { last: at("2026-05-01T03:00:00.120Z"), next: at("2026-05-02T03:00:00Z"), lastUpdated: NEVER };
    expect(statusJson(status)).toEqual({
      Last: "2026-05-01T03:00:00.12+00:00",
      Next: "2026-05-02T03:00:00+00:00",
      LastUpdated: "0001-01-01T00:00:00+00:00",
    });
    expect(parseStatusJson(JSON.stringify(statusJson(status)))).toEqual(status);
    // What the SDK writes: seven fractional digits.
    expect(
      parseStatusJson(
        '{"Last":"2026-05-01T03:00:00.1234567+00:00","Next":"2026-05-02T03:00:00+00:00","LastUpdated":"2026-05-01T03:00:00.1234567+00:00"}',
      )?.last,
    ).toEqual(at("2026-05-01T03:00:00.123Z"));
    expect(dotnetDate(at("2026-05-01T03:00:10Z"))).toBe("2026-05-01T03:00:10+00:00");
    for (const bad of [
      "",
      "[]",
      "{}",
      '{"Last":1,"Next":"x","LastUpdated":"y"}',
      '{"Last":"x","Next":"x","LastUpdated":"x"}',
    ])
      expect(parseStatusJson(bad)).toBeUndefined();
  });
});
