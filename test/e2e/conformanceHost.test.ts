import { accessSync, constants, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { KNOWN_DIFFERENCES } from "../../scripts/verification/conformance/rows";
import { runConformance } from "../../scripts/verification/conformance/run";
import { SCENARIOS } from "../../scripts/verification/conformance/scenarios";

/**
 * `npm run conformance:host -- --quick` in CI: the local host and the real WebJobs SDK (the .NET program of
 * scripts/verification/conformance/dotnet, built with `dotnet` from NuGet into the git-ignored .conformance-host/ on
 * first use) run the short scenarios on one Azurite, and every measured row must agree, or be a known difference that
 * docs/LOCAL-HOST.md lists. Skipped, saying why, on a machine without `dotnet`; never under CI. The full run (the
 * 5.5-minute message, a failover with the lock's default periods) is `npm run conformance:host`.
 */

const hasDotnet = (process.env.PATH ?? "").split(path.delimiter).some((dir) => {
  try {
    accessSync(path.join(dir, "dotnet"), constants.X_OK);
    return true;
  } catch {
    return false;
  }
});
const inCi = process.env.CI !== undefined && process.env.CI !== "";
if (!hasDotnet && inCi) throw new Error("CI is set, and conformance:host never skips there: install the .NET SDK.");

const QUICK_ROWS = [
  "queue.success",
  "queue.retry",
  "queue.poison",
  "queue.poison-ttl",
  "queue.invalid-base64",
  "queue.not-utf8",
  "queue.polling-backoff",
  "queue.concurrency",
  "queue.default-threshold",
  "queue.default-threshold-dynamic",
  "timer.occurrences",
  "timer.one-instance-per-app",
  "lock.blob",
  "lock.renewal",
  "lock.polling",
  "timer.monitor-off",
  "timer.overrun",
  "timer.run-on-startup",
  "timer.status-blob",
  "timer.past-due",
  "host-json.recovery-minimum",
];

(hasDotnet ? describe : describe.skip)(
  `conformance:host --quick: the local host against the WebJobs SDK${hasDotnet ? "" : " (skipped: no dotnet on PATH)"}`,
  () => {
    it("measures every row on both sides, and each agrees or is a known difference LOCAL-HOST.md lists", async () => {
      const lines: string[] = [];
      const result = await runConformance({
        scenarios: SCENARIOS.filter((scenario) => scenario.quick),
        quick: true,
        log: (line) => lines.push(line),
      });
      const ids = result.rows.map((row) => row.id);
      expect(ids).toEqual(expect.arrayContaining(QUICK_ROWS));
      const failed = result.rows.filter((row) => row.verdict === "differs");
      expect(
        failed.map(
          (row) => `${row.id}: SDK ${JSON.stringify(row.sdk)} | local ${JSON.stringify(row.local)} — ${row.why}`,
        ),
        lines.join("\n"),
      ).toEqual([]);
      const localHost = readFileSync(path.join(__dirname, "..", "..", "docs", "LOCAL-HOST.md"), "utf8");
      for (const id of Object.keys(KNOWN_DIFFERENCES)) expect(localHost, `LOCAL-HOST.md names ${id}`).toContain(id);
      console.log(
        `conformance:host --quick: ${result.rows.length} rows in ${result.totalSeconds} s (build ${result.build.seconds} s)`,
      );
    }, 600_000);
  },
);
