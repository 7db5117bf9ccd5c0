import { listFlag, numberFlag, parseFlags, pathFlag, UsageError } from "../../src/cli/flags";
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
  let options;
  try {
    const values = parseFlags(argv, {
      out: { type: "string" },
      quick: { type: "boolean" },
      seed: { type: "string" },
      only: { type: "string" },
      rounds: { type: "string" },
      help: { type: "boolean" },
    });
    if (values.help === true) {
      process.stdout.write(`${USAGE}\n`);
      return 0;
    }
    options = {
      outPath: pathFlag(values.out, "--out") ?? "bench-results/chaos.json",
      quick: values.quick === true,
      seed: numberFlag(values.seed, "--seed", { min: 0, max: Number.MAX_SAFE_INTEGER }) ?? 1,
      only: listFlag(
        values.only,
        "--only",
        SCENARIOS.map((scenario) => scenario.name),
      ),
      rounds: numberFlag(values.rounds, "--rounds", { min: 1, max: 100 }),
    };
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`${error.message}\n\n${USAGE}\n`);
    return 2;
  }
  const report = await runChaosSuite(options);
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
