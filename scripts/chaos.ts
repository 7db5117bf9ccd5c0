import { parseArgs } from "node:util";
import { runChaosSuite } from "./chaos/suite";
import { SCENARIOS } from "./chaos/scenarios/index";

/**
 * `npm run chaos -- [--out FILE] [--quick] [--seed N] [--only NAME[,NAME]] [--rounds N]`: the chaos suite. Real
 * faults (SIGKILL, SIGSTOP/SIGCONT, a storage outage, killed workers, duplicate and bad messages, step-down, two
 * regions) in real instance processes on a real Azurite; invariants checked from the event log and the stored state.
 * Writes the JSON report, one timeline SVG and event log per scenario next to it; exit code 0 only if all passed.
 */

const USAGE = `Usage: npm run chaos -- [flags]
  --out FILE        JSON report (default bench-results/chaos.json); timelines chaos-<scenario>.svg next to it
  --quick           CI mode: fewer rounds, shorter waits
  --seed N          seed of every random choice (default 1)
  --only NAMES      comma-separated scenarios: ${SCENARIOS.map((scenario) => scenario.name).join(", ")}
  --rounds N        rounds for the scenarios that repeat a fault (default: their own, fewer with --quick)
  --help            show this text`;

/** Parses the flags and runs the suite; returns the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    options: { out: { type: "string" }, quick: { type: "boolean" }, seed: { type: "string" }, only: { type: "string" }, rounds: { type: "string" }, help: { type: "boolean" } },
  });
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const seed = Number(values.seed ?? "1");
  const rounds = values.rounds === undefined ? undefined : Number(values.rounds);
  const only = values.only?.split(",").map((name) => name.trim()).filter((name) => name !== "");
  const unknown = only?.filter((name) => !SCENARIOS.some((scenario) => scenario.name === name)) ?? [];
  if (!Number.isInteger(seed) || (rounds !== undefined && (!Number.isInteger(rounds) || rounds < 1 || rounds > 100)) || unknown.length > 0) {
    process.stderr.write(`${unknown.length > 0 ? `Unknown scenario(s): ${unknown.join(", ")}` : "--seed must be a whole number and --rounds 1–100"}\n\n${USAGE}\n`);
    return 2;
  }
  const report = await runChaosSuite({ outPath: values.out ?? "bench-results/chaos.json", quick: values.quick === true, seed, only, rounds });
  return report.passed ? 0 : 1;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(2);
    },
  );
}
