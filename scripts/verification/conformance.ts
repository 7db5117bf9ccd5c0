/**
 * `npm run conformance:host` (issue 43): the local host measured against the real thing. The WebJobs SDK from NuGet —
 * the code under the Functions host's queue and timer triggers — and the local host's own listeners (`dev/src/local/`)
 * run the same scenarios on one Azurite, each host process behind a counting proxy; every behaviour
 * docs/LOCAL-HOST.md claims of those triggers becomes a row with both measurements and a verdict. Exit code 0 when
 * every measured row agrees or is a known difference (listed in LOCAL-HOST.md), 1 when one differs, 2 on a bad
 * command line or when the SDK's side cannot be built.
 *
 *   npm run conformance:host                        # every scenario (about 7 minutes: one message runs 5.5 minutes)
 *   npm run conformance:host -- --quick             # the short run CI makes (test/e2e/conformanceHost.test.ts)
 *   npm run conformance:host -- --only queue-messages,timer-failover
 */
import { loadavg } from "node:os";
import { listFlag, parseFlags, pathFlag, UsageError } from "../../src/cli/flags";
import { formatRows, verdictCounts, writeReport } from "./conformance/report";
import { runConformance } from "./conformance/run";
import { SCENARIOS } from "./conformance/scenarios";

const NAMES = SCENARIOS.map((scenario) => scenario.name);

const HELP = `Usage: npm run conformance:host -- [--quick] [--only LIST] [--out FILE]

Runs each scenario on the real WebJobs SDK (a .NET program built from NuGet with dotnet into .conformance-host/) and
on the local host, on one Azurite, and prints a row per behaviour with both measurements and a verdict.

  --quick       the short run (CI): the scenarios marked quick (not the 5.5-minute message, nor the
                failover with the lock's default periods)
  --only LIST   only these scenarios, comma-separated, of ${NAMES.join(", ")}
  --out FILE    JSON report (default bench-results/conformance-host.json; with --quick,
                bench-results/conformance-host-quick.json)
  --help        show this text
`;

async function main(): Promise<void> {
  const values = parseFlags(process.argv.slice(2), {
    quick: { type: "boolean" },
    only: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean" },
  });
  if (values.help === true) {
    console.log(HELP);
    return;
  }
  const quick = values.quick === true;
  const only = listFlag(values.only, "--only", NAMES);
  const out =
    pathFlag(values.out, "--out") ??
    (quick ? "bench-results/conformance-host-quick.json" : "bench-results/conformance-host.json");
  const scenarios = SCENARIOS.filter((scenario) =>
    only === undefined ? !quick || scenario.quick : only.includes(scenario.name),
  );
  const loadStart = loadavg()[0] ?? 0;
  const result = await runConformance({ scenarios, quick, log: (line) => console.log(line) });
  for (const line of formatRows(result.rows)) console.log(line);
  writeReport(out, quick, result, loadStart);
  console.log(`${result.totalSeconds} s (build ${result.build.seconds} s); report: ${out}`);
  process.exitCode = verdictCounts(result.rows).differs > 0 ? 1 : 0;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  if (error instanceof UsageError) console.error(`\n${HELP}`);
  process.exitCode = 2;
});
