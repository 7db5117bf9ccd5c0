import type { LimitsArgs, MeasurementName } from "./cli";
import type { BenchCluster } from "./cluster";

/**
 * One measurement of `npm run bench:limits`: a module that runs on the shared cluster (or on its own, in process),
 * returns its figures for the JSON report, and prints its table. Add a measurement by writing such a module and
 * listing it in `limits.ts` and `MEASUREMENTS` (cli.ts).
 */

/** What a measurement gets: the run's options, the cluster (started once, for those that need it), and a log. */
export interface BenchContext {
  args: LimitsArgs;
  cluster: () => Promise<BenchCluster>;
  abortSignal: AbortSignal;
  log: (line: string) => void;
}

/** A measurement: its name, what it needs, and how it runs and reports. */
export interface Measurement<T> {
  name: MeasurementName;
  /** Whether it runs on the real app (the cluster) rather than in process. */
  needsCluster: boolean;
  run(context: BenchContext): Promise<T>;
  /** Its figures as a Markdown table (and a line or two), for the console and docs/benchmarks.md. */
  table(result: T): string;
}

/** Median, minimum and maximum of samples. */
export interface Stats {
  median: number;
  min: number;
  max: number;
  n: number;
}

export function stats(values: readonly number[]): Stats {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const median =
    sorted.length === 0
      ? Number.NaN
      : sorted.length % 2 === 1
        ? (sorted[middle] ?? Number.NaN)
        : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2;
  return { median, min: sorted[0] ?? Number.NaN, max: sorted.at(-1) ?? Number.NaN, n: sorted.length };
}

/** A number rounded to `digits` decimals, for a report. */
export function round(value: number, digits = 2): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
