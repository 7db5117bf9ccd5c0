import { listFlag, numberFlag, parseFlags, pathFlag, UsageError } from "../../../../src/cli/flags";
import { scheduleFlag } from "../../../../dev/src/cli/scheduleFlag";
import { DEFAULT_SCHEDULE } from "../throughput/cli";

/** The command line of `npm run bench:limits`, parsed and validated up front. */

/** The benchmark's options. */
export interface LimitsArgs {
  help: boolean;
  /** JSON report path. @default "bench-results/limits.json" */
  out: string;
  /** Instance processes of the local host. @default 3 */
  instances: number;
  /** COORDINATOR_SCHEDULE of the instances. @default the app's, every minute */
  schedule: string;
  /** Items of the large job the small one runs beside. @default 200000 */
  bigItems: number;
  /** Items of the small job. @default 10 */
  smallItems: number;
  /** Small jobs timed on the idle coordinator, and as many beside the large job. @default 5 */
  samples: number;
  /** Concurrent submits with one idempotency key. @default 50 */
  duplicates: number;
  /** The measurements to run. @default every one */
  only: MeasurementName[];
}

export { UsageError };

export const USAGE = `Usage: npm run bench:limits -- [flags]

Flow control (issue 42), on one Azurite and N instance processes of this repository's app on the local host, at the
app's default settings, in one run — one module a measurement (scripts/verification/bench/limits/):
  small-job   how soon after its submission a small job completes while a large job of equal priority runs, against
              the same small job on the idle coordinator (the idle samples first, then the busy ones, back to back)
  duplicates  concurrent submits with one Idempotency-Key, spread over the instances' HTTP routes: jobs made (1)
  window      the leader's real step on in-memory ports, many large jobs of one tenant and a small one of another:
              a dispatch window shared by all jobs against one window per job (the release before), in units served
              ahead of the small job and the workers' use
  sustained   its own cluster behind a counting proxy: a job limited to 8 at once, one to 20 starts per 1 s and one
              unlimited, 480 items of 200 ms each: utilisation (mean at once over the limit, starts/s over the rate)
              and storage requests per item with limits on against off
Prints a table per measurement, writes JSON.

  --out FILE            JSON report (default bench-results/limits.json)
  --instances N         instance processes, 1–8 (default 3)
  --schedule CRON       COORDINATOR_SCHEDULE, six fields (default "${DEFAULT_SCHEDULE}", the app's)
  --big-items N         items of the large job, 1000–1000000 (default 200000)
  --small-items N       items of the small job, 1–1000 (default 10)
  --samples N           small jobs timed idle, and as many busy, 1–50 (default 5)
  --duplicates N        concurrent duplicate submits, 2–500 (default 50)
  --only a,b            run only these measurements (small-job, duplicates, window, sustained)
  --help                show this text`;

/** The measurements, by name. */
export const MEASUREMENTS = ["small-job", "duplicates", "window", "sustained"] as const;
export type MeasurementName = (typeof MEASUREMENTS)[number];

/**
 * Parses `argv` (without node and script).
 *
 * @throws UsageError naming the flag and the allowed values.
 */
export function parseLimitsArgs(argv: readonly string[]): LimitsArgs {
  const values = parseFlags(argv, {
    out: { type: "string" },
    instances: { type: "string" },
    schedule: { type: "string" },
    "big-items": { type: "string" },
    "small-items": { type: "string" },
    samples: { type: "string" },
    duplicates: { type: "string" },
    only: { type: "string" },
    help: { type: "boolean" },
  });
  return {
    help: values.help === true,
    out: pathFlag(values.out, "--out") ?? "bench-results/limits.json",
    instances: numberFlag(values.instances, "--instances", { min: 1, max: 8 }) ?? 3,
    schedule: scheduleFlag(values.schedule, "--schedule", DEFAULT_SCHEDULE),
    bigItems: numberFlag(values["big-items"], "--big-items", { min: 1000, max: 1_000_000 }) ?? 200_000,
    smallItems: numberFlag(values["small-items"], "--small-items", { min: 1, max: 1000 }) ?? 10,
    samples: numberFlag(values.samples, "--samples", { min: 1, max: 50 }) ?? 5,
    duplicates: numberFlag(values.duplicates, "--duplicates", { min: 2, max: 500 }) ?? 50,
    only: listFlag(values.only, "--only", MEASUREMENTS) ?? [...MEASUREMENTS],
  };
}
