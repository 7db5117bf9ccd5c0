import { numberFlag, parseFlags, pathFlag, UsageError } from "../../../../src/cli/flags";

export { UsageError };

/** The benchmark's command line. */
export interface BenchArgs {
  /** Rounds per scenario and implementation. @default 5 */
  rounds: number;
  /** Where the JSON report goes. @default "bench-results/lease.json" */
  out: string;
  /** How long each cost measurement holds or watches, in s; 0 skips the cost phase. @default 60 */
  costSeconds: number;
  help: boolean;
}

export const USAGE = `Usage: npm run bench:lease -- [--rounds N] [--cost-seconds S] [--out FILE]

Measures leadership handover on one Azurite, for this library (at its defaults, and with takeover as the app runs
it) and for a re-implementation of the Leader Election pattern's C# sample (BlobDistributedMutex), with three
contender processes each:
  graceful handover  the leader releases; time until another contender holds the lease and runs its task
  crash takeover     the leader process is SIGKILLed; time until another contender holds the lease
Then what leadership costs, with takeover and without (the app's wiring, storage operations counted): a busy
leader and a busy watcher per hour, and an idle app (no job) per month at the default one-minute schedule.

Options:
  --rounds N         rounds per scenario and implementation, 1-100 (default 5)
  --cost-seconds S   how long each cost measurement runs, 0-3600 (default 60; 0 skips it)
  --out FILE         where to write the JSON report (default bench-results/lease.json; folders are created)
  --help             show this help`;

/** @throws UsageError for an unknown flag, a missing value or a value out of range. */
export function parseBenchArgs(argv: string[]): BenchArgs {
  const values = parseFlags(argv, {
    rounds: { type: "string" },
    out: { type: "string" },
    "cost-seconds": { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  return {
    rounds: numberFlag(values.rounds, "--rounds", { min: 1, max: 100 }) ?? 5,
    out: pathFlag(values.out, "--out") ?? "bench-results/lease.json",
    costSeconds: numberFlag(values["cost-seconds"], "--cost-seconds", { min: 0, max: 3600 }) ?? 60,
    help: values.help ?? false,
  };
}
