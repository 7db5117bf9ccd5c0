import { readFileSync } from "node:fs";
import path from "node:path";
import { CronExpressionParser } from "cron-parser";
import { describe, expect, it } from "vitest";
import { settingsSchema } from "../../src/app/settings";
import { REPO_ROOT } from "./bicep";

/**
 * docs/DEPLOY.md prints the idle cost of the coordinator timer per schedule. This test recomputes every row from the
 * prices and billing rules the same section states, so the table cannot drift from its own derivation.
 */

const DEPLOY_MD = readFileSync(path.join(REPO_ROOT, "docs", "DEPLOY.md"), "utf8");

/** The rules as DEPLOY.md states them (Flex Consumption on demand, list prices in USD). */
const MONTH_SECONDS = 30 * 24 * 3600;
const MINIMUM_BILLED_SECONDS = 1;
const INSTANCE_GB = 2;
const PRICE_PER_GB_SECOND = 0.000026;
const PRICE_PER_EXECUTION = 0.4 / 1_000_000;
const FREE_GB_SECONDS = 100_000;
const FREE_EXECUTIONS = 250_000;

const number = (text: string): number => Number(text.replace(/[$,]/g, ""));

/** Rows of the idle-timer table: schedule, ticks, GB-s, list price, price after the free grant. */
function costRows(): { schedule: string; ticks: number; gbSeconds: number; listPrice: number; afterGrant: number }[] {
  return [
    ...DEPLOY_MD.matchAll(/^\| `([^`]+)` \([^)]*\) \| ([\d,]+) \| ([\d,]+) \| (\$[\d.]+) \| (\$[\d.]+) \|$/gm),
  ].map((match) => ({
    schedule: match[1] ?? "",
    ticks: number(match[2] ?? ""),
    gbSeconds: number(match[3] ?? ""),
    listPrice: number(match[4] ?? ""),
    afterGrant: number(match[5] ?? ""),
  }));
}

/** Seconds between two ticks of an NCRONTAB schedule (with seconds), from the parser the local runner uses. */
function intervalSeconds(schedule: string): number {
  const times = CronExpressionParser.parse(schedule, { currentDate: new Date("2026-01-01T00:00:00Z"), tz: "UTC" })
    .take(3)
    .map((date) => date.getTime());
  const [first, second, third] = times;
  if (first === undefined || second === undefined || third === undefined || second - first !== third - second)
    throw new Error(`${schedule} is not a fixed interval`);
  return (second - first) / 1000;
}

describe("DEPLOY.md idle cost table", () => {
  it("states the prices, free grant and 1,000 ms minimum the rows are computed from, with the source", () => {
    expect(DEPLOY_MD).toContain("$0.000026 per GB-s");
    expect(DEPLOY_MD).toContain("$0.40 per million");
    expect(DEPLOY_MD).toContain("100,000 GB-s and 250,000 executions per subscription");
    expect(DEPLOY_MD).toContain("the minimum billable execution period is 1,000 ms");
    expect(DEPLOY_MD).toContain("https://learn.microsoft.com/azure/azure-functions/flex-consumption-plan#billing");
  });

  it("has a row for every 10 s, 30 s, 1 min and 5 min, and one for the code's default schedule", () => {
    const intervals = costRows().map((row) => intervalSeconds(row.schedule));
    expect(intervals).toEqual([10, 30, 60, 300]);
    expect(costRows().map((row) => row.schedule)).toContain(settingsSchema.parse({}).COORDINATOR_SCHEDULE);
  });

  it("every row follows from the rules: ticks, GB-s at the 1 s minimum on 2 GB, list price, price after the grant", () => {
    for (const row of costRows()) {
      const ticks = MONTH_SECONDS / intervalSeconds(row.schedule);
      const gbSeconds = ticks * MINIMUM_BILLED_SECONDS * INSTANCE_GB;
      const listPrice = gbSeconds * PRICE_PER_GB_SECOND + ticks * PRICE_PER_EXECUTION;
      const afterGrant =
        Math.max(0, gbSeconds - FREE_GB_SECONDS) * PRICE_PER_GB_SECOND +
        Math.max(0, ticks - FREE_EXECUTIONS) * PRICE_PER_EXECUTION;
      expect({ ...row }, row.schedule).toEqual({
        schedule: row.schedule,
        ticks,
        gbSeconds,
        listPrice: Math.round(listPrice * 100) / 100,
        afterGrant: Math.round(afterGrant * 100) / 100,
      });
    }
  });

  it("the default's summary matches its row", () => {
    const defaultRow = costRows().find((row) => row.schedule === settingsSchema.parse({}).COORDINATOR_SCHEDULE);
    expect(defaultRow).toBeDefined();
    const summary = `**${defaultRow?.ticks.toLocaleString("en-US")} idle executions and ${defaultRow?.gbSeconds.toLocaleString("en-US")} GB-s per app per month**`;
    expect(DEPLOY_MD).toContain(summary);
  });
});
