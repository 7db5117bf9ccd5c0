import { parseArgs } from "node:util";

/** The benchmark's command line. */
export interface BenchArgs {
  /** Rounds per scenario and implementation. @default 5 */
  rounds: number;
  /** Where the JSON report goes. @default "bench-results/lease.json" */
  out: string;
  help: boolean;
}

export const USAGE = `Usage: npm run bench:lease -- [--rounds N] [--out FILE]

Measures leadership handover on one Azurite, for this library and for a re-implementation of the Leader Election
pattern's C# sample (BlobDistributedMutex), with three contender processes each:
  graceful handover  the leader releases; time until another contender holds the lease and runs its task
  crash takeover     the leader process is SIGKILLed; time until another contender holds the lease

Options:
  --rounds N   rounds per scenario and implementation, 1-100 (default 5)
  --out FILE   where to write the JSON report (default bench-results/lease.json; folders are created)
  --help       show this help`;

/** A command-line mistake: the message says what to fix; the caller prints it with the usage. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/** @throws UsageError for an unknown flag, a missing value or a value out of range. */
export function parseBenchArgs(argv: string[]): BenchArgs {
  let values: { rounds?: string; out?: string; help?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        rounds: { type: "string" },
        out: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const rounds = values.rounds === undefined ? 5 : Number(values.rounds);
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 100) {
    throw new UsageError(`--rounds must be a whole number from 1 to 100; got ${JSON.stringify(values.rounds)}.`);
  }
  const out = values.out ?? "bench-results/lease.json";
  if (out.trim() === "") throw new UsageError("--out must name a file.");
  return { rounds, out, help: values.help ?? false };
}
