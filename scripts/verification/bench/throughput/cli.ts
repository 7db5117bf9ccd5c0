import { settingsSchema } from "../../../../src/app/settings";
import { numberFlag, parseFlags, pathFlag, UsageError } from "../../../../src/cli/flags";
import { scheduleFlag } from "../../../../dev/src/cli/scheduleFlag";

/** The command line of `npm run bench:throughput`, parsed and validated up front. */

/** The app's default timer schedule (COORDINATOR_SCHEDULE). */
export const DEFAULT_SCHEDULE = settingsSchema.shape.COORDINATOR_SCHEDULE.parse(undefined);

/** The benchmark's options. */
export interface ThroughputArgs {
  help: boolean;
  /** JSON report path. @default "bench-results/throughput.json" */
  out: string;
  /** Items of the `small` scenario (inline, about 100 bytes each). @default 20000 */
  smallItems: number;
  /** Items of the `blob` scenario (one input blob each). @default 2000 */
  blobItems: number;
  /** Items of the `short` scenario (a short job of small items). @default 200 */
  shortItems: number;
  /** Rounds: each runs every scenario's implementations, each ratio's two sides back to back. @default 5 */
  rounds: number;
  /**
   * Rounds that also run the per-item loop (the first ones): at 20,000 small items it takes some 10 minutes a round.
   * @default 1
   */
  perItemRounds: number;
  /** A report of an earlier run (e.g. on the code before a change) to set beside this one's figures. */
  before: string | undefined;
  /** Instance processes (and baseline worker processes). @default 3 */
  instances: number;
  /** COORDINATOR_SCHEDULE of the instances. @default the app's, every minute */
  schedule: string;
  /** Items of the leader-memory job. @default 100000 */
  memoryItems: number;
  /** Skip the leader-memory job. @default false */
  skipMemory: boolean;
}

export { UsageError };

export const USAGE = `Usage: npm run bench:throughput -- [flags]

On one Azurite, in one run: three scenarios — small (inline items of about 100 bytes of CSV), blob (one input blob
per item) and short (a short job of small items) — each through the app (3 instance processes of the local host, the
default schedule, submissions wake the coordinator) and raw-SDK baselines doing the same work (a per-item loop, and a
batched loop sending the same unit messages as the app); then the app and the batched loop again, each idle 4 s
first (their queue polling backed off to 2 s, as a deployed app's idle instances). Items/s, storage operations and
function executions per item (every request counted by a request policy in each process's SDK pipeline), CPU time,
time from submission to first dispatch and to completion, cost per million items at list prices; then one large job
end to end for the leader's memory. Prints tables, writes JSON.

  --out FILE            JSON report (default bench-results/throughput.json)
  --small-items N       items of the small scenario, 100–200000 (default 20000)
  --blob-items N        items of the blob scenario, 10–20000 (default 2000)
  --short-items N       items of the short scenario (small items; how soon a short job completes), 10–5000 (default 200)
  --rounds N            rounds, each ratio's two sides back to back in each, 1–10 (default 5)
  --per-item-rounds N   rounds (the first ones) that also run the per-item loop, 0–10 (default 1; it takes some
                        10 minutes a round at 20,000 small items)
  --before FILE         the JSON report of an earlier run (say, of the code before a change) to set beside this one
  --instances N         instance processes and baseline workers, 1–8 (default 3)
  --schedule CRON       COORDINATOR_SCHEDULE, six fields (default "${DEFAULT_SCHEDULE}", the app's)
  --memory-items N      items of the leader-memory job, 1000–1000000 (default 100000)
  --skip-memory         skip the leader-memory job
  --help                show this text`;

/**
 * Parses `argv` (without node and script).
 *
 * @throws UsageError naming the flag and the allowed values.
 */
export function parseThroughputArgs(argv: readonly string[]): ThroughputArgs {
  const values = parseFlags(argv, {
    out: { type: "string" },
    "small-items": { type: "string" },
    "blob-items": { type: "string" },
    "short-items": { type: "string" },
    rounds: { type: "string" },
    "per-item-rounds": { type: "string" },
    before: { type: "string" },
    instances: { type: "string" },
    schedule: { type: "string" },
    "memory-items": { type: "string" },
    "skip-memory": { type: "boolean" },
    help: { type: "boolean" },
  });
  return {
    help: values.help === true,
    out: pathFlag(values.out, "--out") ?? "bench-results/throughput.json",
    smallItems: numberFlag(values["small-items"], "--small-items", { min: 100, max: 200_000 }) ?? 20_000,
    blobItems: numberFlag(values["blob-items"], "--blob-items", { min: 10, max: 20_000 }) ?? 2000,
    shortItems: numberFlag(values["short-items"], "--short-items", { min: 10, max: 5000 }) ?? 200,
    rounds: numberFlag(values.rounds, "--rounds", { min: 1, max: 10 }) ?? 5,
    perItemRounds: numberFlag(values["per-item-rounds"], "--per-item-rounds", { min: 0, max: 10 }) ?? 1,
    before: pathFlag(values.before, "--before"),
    instances: numberFlag(values.instances, "--instances", { min: 1, max: 8 }) ?? 3,
    schedule: scheduleFlag(values.schedule, "--schedule", DEFAULT_SCHEDULE),
    memoryItems: numberFlag(values["memory-items"], "--memory-items", { min: 1000, max: 1_000_000 }) ?? 100_000,
    skipMemory: values["skip-memory"] === true,
  };
}
