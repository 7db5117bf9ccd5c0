import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { CronExpressionParser } from "cron-parser";
import { describe, expect, it } from "vitest";
import { settingsSchema } from "../../src/app/settings";
import { REPO_ROOT } from "./paths";

/**
 * docs/how-to/tune-cost.md prints the idle cost of the coordinator timer per schedule. This test recomputes every row
 * from the prices and billing rules the same section states, so the table cannot drift from its own derivation.
 */

const COST_MD = readFileSync(path.join(REPO_ROOT, "docs", "how-to", "tune-cost.md"), "utf8");

/** The rules as tune-cost.md states them (Flex Consumption on demand, list prices in USD). */
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
  return [...COST_MD.matchAll(/^\| `([^`]+)` \([^)]*\) \| ([\d,]+) \| ([\d,]+) \| (\$[\d.]+) \| (\$[\d.]+) \|$/gm)].map(
    (match) => ({
      schedule: match[1] ?? "",
      ticks: number(match[2] ?? ""),
      gbSeconds: number(match[3] ?? ""),
      listPrice: number(match[4] ?? ""),
      afterGrant: number(match[5] ?? ""),
    }),
  );
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

describe("tune-cost.md idle cost table", () => {
  it("states the prices, free grant and 1,000 ms minimum the rows are computed from, with the source", () => {
    expect(COST_MD).toContain("$0.000026 per GB-s");
    expect(COST_MD).toContain("$0.40 per million");
    expect(COST_MD).toContain("100,000 GB-s and 250,000 executions per subscription");
    expect(COST_MD).toContain("the minimum billable execution period is 1,000 ms");
    expect(COST_MD).toContain("https://learn.microsoft.com/azure/azure-functions/flex-consumption-plan#billing");
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
    expect(COST_MD).toContain(summary);
  });
});

/**
 * Every idle-cost figure in README.md, docs/*.md and infra/smoke.sh comes from the table above: a paragraph (or table
 * row) about the idle timer may state only the figures of the rows it names — by schedule (`*\/30 * * * * *`) or in
 * words ("every 30 s") — or, naming none, of the default schedule's row; besides them only the free grant and unit
 * prices. (docs/DEPLOY.md once said idle costs $4.53 a month, the 30 s row, beside a table whose default row said
 * $2.26.)
 */
describe("idle-cost figures across the docs come from tune-cost.md's table", () => {
  const FILES = [
    "README.md",
    ...readdirSync(path.join(REPO_ROOT, "docs"), { recursive: true, encoding: "utf8" })
      .filter((name) => name.endsWith(".md"))
      .map((name) => `docs/${name.split(path.sep).join("/")}`),
    "infra/smoke.sh",
  ];
  /** The free grant, and list prices ($ per GB-s, per million executions or operations), which are not cost figures. */
  const CONSTANTS = new Set([100_000, 250_000, 0.000026, 0.4, 0.44, 5.5]);
  const ABOUT_IDLE = /\bidle\b|heartbeat|\btimer\b|\bticks?\b/i;
  const TABLE_ROW = /^\| `[^`]+` \([^)]*\) \|/;

  /** Paragraphs of a file (split at blank lines), each table row apart; not the idle-cost table's own rows. */
  function paragraphs(text: string): string[] {
    return text
      .split(/\n\s*\n/)
      .flatMap((block) => (block.trimStart().startsWith("|") ? block.split("\n") : [block]))
      .filter((paragraph) => !TABLE_ROW.test(paragraph.trim()));
  }

  /** The rows a paragraph names, by schedule or in words; the default row when it names none. */
  function rowsNamedIn(paragraph: string) {
    const rows = costRows();
    const defaultSchedule = settingsSchema.parse({}).COORDINATOR_SCHEDULE;
    const named = rows.filter((row) => {
      const words = intervalSeconds(row.schedule) < 60 ? `every ${intervalSeconds(row.schedule)} s` : "";
      const minutes = intervalSeconds(row.schedule) / 60;
      const inMinutes = minutes === 1 ? /every minute|1-minute/ : new RegExp(`every ${minutes} minutes`);
      return (
        paragraph.includes(`\`${row.schedule}\``) ||
        (words !== "" && paragraph.includes(words)) ||
        (minutes >= 1 && inMinutes.test(paragraph))
      );
    });
    return named.length > 0 ? named : rows.filter((row) => row.schedule === defaultSchedule);
  }

  /**
   * The monthly figures a paragraph states: dollar amounts of a cent or more that are not a unit price (per million,
   * per GB-s), and counts of executions, ticks or GB-s with "month" after them in the same sentence.
   */
  function figures(paragraph: string): number[] {
    const dollars = [...paragraph.matchAll(/\$(\d[\d,]*(?:\.\d+)?)(?![\d.])([^\n$]{0,16})/g)]
      .filter((match) => !/^\s*(?:per million|per GB-s|\/M\b|\/GB-s)/.test(match[2] ?? ""))
      .map((match) => number(match[1] ?? ""))
      .filter((amount) => amount >= 0.01);
    const counts = [
      ...paragraph.matchAll(/\b(\d{1,3}(?:,\d{3})+|\d{4,})\s+(?:idle\s+)?(?:executions|ticks|GB-s)\b([^.;]*)/g),
    ]
      .filter((match) => /\bmonth\b/.test(match[2] ?? ""))
      .map((match) => number(match[1] ?? ""));
    return [...dollars, ...counts];
  }

  it.each(FILES)("%s states only figures of the rows it speaks of", (file) => {
    const text = readFileSync(path.join(REPO_ROOT, file), "utf8");
    const stray: string[] = [];
    for (const paragraph of paragraphs(text).filter((candidate) => ABOUT_IDLE.test(candidate))) {
      const allowed = new Set(
        rowsNamedIn(paragraph).flatMap((row) => [row.ticks, row.gbSeconds, row.listPrice, row.afterGrant]),
      );
      for (const figure of figures(paragraph))
        if (!allowed.has(figure) && !CONSTANTS.has(figure))
          stray.push(`${figure} in: ${paragraph.replace(/\s+/g, " ").slice(0, 160)}…`);
    }
    expect(stray).toEqual([]);
  });

  it("the check would have caught the deploy guide's old idle figure", () => {
    const old = "Idle, each app costs about $4.53 a month at list prices before the free grant (the timer alone).";
    const allowed = rowsNamedIn(old).flatMap((row) => [row.listPrice, row.afterGrant]);
    expect(figures(old)).toEqual([4.53]);
    expect(allowed).not.toContain(4.53);
  });
});
