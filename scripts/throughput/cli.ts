import { parseArgs } from "node:util";
import { parseSchedule } from "../local/timerTrigger";

/** The command line of `npm run bench:throughput`, parsed and validated up front. */

/** The benchmark's options. */
export interface ThroughputArgs {
  help: boolean;
  /** JSON report path. @default "bench-results/throughput.json" */
  out: string;
  /** Items of the throughput job (project and baseline). @default 2000 */
  items: number;
  /** Project/baseline pairs, the order alternating per round. @default 2 */
  rounds: number;
  /** Instance processes (and baseline worker processes). @default 3 */
  instances: number;
  /** COORDINATOR_SCHEDULE of the instances. @default "*\/2 * * * * *" */
  schedule: string;
  /** DISPATCH_BATCH_SIZE of the instances (as in production). @default 500 */
  dispatchBatchSize: number;
  /** Items of the leader-memory job. @default 100000 */
  memoryItems: number;
  /** Skip the leader-memory job. @default false */
  skipMemory: boolean;
  /** Longest the memory job may take; when the estimate is longer, a smaller job is run and extrapolated. @default 10 */
  memoryMaxMinutes: number;
}

/** A bad command line: the message names the flag and what is allowed. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

export const USAGE = `Usage: npm run bench:throughput -- [flags]

Items per second end-to-end through the local runner (3 instance processes on Azurite) against a raw-SDK baseline
doing the same queue operations on the same Azurite in the same run; storage operations per item (every request
counted by a proxy in front of Azurite); the leader's peak memory for a large job. Prints a table, writes JSON.

  --out FILE                JSON report (default bench-results/throughput.json)
  --items N                 items of the throughput job, 10–200000 (default 2000)
  --rounds N                baseline/project pairs, order alternating, 1–10 (default 2)
  --instances N             instance processes and baseline workers, 1–8 (default 3)
  --schedule CRON           COORDINATOR_SCHEDULE, six fields (default "*/2 * * * * *")
  --dispatch-batch-size N   DISPATCH_BATCH_SIZE, 1–10000 (default 500, the production default)
  --memory-items N          items of the leader-memory job, 1000–1000000 (default 100000)
  --memory-max-minutes M    run a smaller memory job (and extrapolate) when the estimate exceeds this, 1–240 (default 10)
  --skip-memory             skip the leader-memory job
  --help                    show this text`;

/**
 * Parses `argv` (without node and script).
 *
 * @throws UsageError naming the flag and the allowed values.
 */
export function parseThroughputArgs(argv: readonly string[]): ThroughputArgs {
  let values;
  try {
    values = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        out: { type: "string" },
        items: { type: "string" },
        rounds: { type: "string" },
        instances: { type: "string" },
        schedule: { type: "string" },
        "dispatch-batch-size": { type: "string" },
        "memory-items": { type: "string" },
        "memory-max-minutes": { type: "string" },
        "skip-memory": { type: "boolean" },
        help: { type: "boolean" },
      },
    }).values;
  } catch (error) {
    throw new UsageError(`${(error as Error).message}. Run with --help for the flags.`);
  }
  const out = values.out ?? "bench-results/throughput.json";
  if (out.trim() === "") throw new UsageError('--out must be a file path, got "".');
  const schedule = (values.schedule ?? "*/2 * * * * *").trim();
  const scheduleProblem = `--schedule must be an NCRONTAB expression with six fields, seconds first (e.g. "*/2 * * * * *"), got "${schedule}"`;
  if (schedule.split(/\s+/).length !== 6) throw new UsageError(`${scheduleProblem}.`);
  try {
    parseSchedule(schedule, "coordinator");
  } catch (error) {
    throw new UsageError(`${scheduleProblem}: ${(error as Error).message}`);
  }
  return {
    help: values.help === true,
    out,
    items: wholeNumber(values.items, "--items", 10, 200_000) ?? 2000,
    rounds: wholeNumber(values.rounds, "--rounds", 1, 10) ?? 2,
    instances: wholeNumber(values.instances, "--instances", 1, 8) ?? 3,
    schedule,
    dispatchBatchSize: wholeNumber(values["dispatch-batch-size"], "--dispatch-batch-size", 1, 10_000) ?? 500,
    memoryItems: wholeNumber(values["memory-items"], "--memory-items", 1000, 1_000_000) ?? 100_000,
    skipMemory: values["skip-memory"] === true,
    memoryMaxMinutes: wholeNumber(values["memory-max-minutes"], "--memory-max-minutes", 1, 240) ?? 10,
  };
}

function wholeNumber(raw: string | undefined, flag: string, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (raw.trim() === "" || !Number.isInteger(value) || value < min || value > max) throw new UsageError(`${flag} must be a whole number from ${min} to ${max}, got "${raw}".`);
  return value;
}
