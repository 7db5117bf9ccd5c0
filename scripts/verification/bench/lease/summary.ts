import type { Implementation } from "./protocol";
import type { RoundSample, Scenario } from "./rounds";

/** Median and max (the required figures) plus the spread, in seconds, rounded to the millisecond. */
export interface Stats {
  median: number;
  max: number;
  min: number;
  mean: number;
  samplesS: number[];
}

/** One implementation's results, under the keys the report must carry. */
export interface ImplementationResults {
  gracefulHandoverS: Stats & {
    /** Next leader's term start − release command sent (includes the old leader's own release call). */
    fromCommandS: Stats;
    rounds: RoundSample[];
  };
  crashTakeoverS: Stats & { rounds: RoundSample[] };
}

/** baseline ÷ an implementation of this library, per figure (null when its figure is 0). */
export interface Ratio {
  median: number | null;
  max: number | null;
}

/** The report's key for each scenario. */
export const SCENARIO_KEYS = { graceful: "gracefulHandoverS", crash: "crashTakeoverS" } as const satisfies Record<
  Scenario,
  keyof ImplementationResults
>;
const SCENARIO_TITLES: Record<Scenario, string> = { graceful: "graceful handover", crash: "crash takeover" };

export function roundMs(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}

export function stats(samplesS: number[]): Stats {
  if (samplesS.length === 0) throw new Error("No samples to summarise.");
  const sorted = [...samplesS].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const at = (index: number): number => sorted[index] ?? Number.NaN;
  const median = sorted.length % 2 === 1 ? at(middle) : (at(middle - 1) + at(middle)) / 2;
  const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return {
    median: roundMs(median),
    max: roundMs(at(sorted.length - 1)),
    min: roundMs(at(0)),
    mean: roundMs(mean),
    samplesS: samplesS.map(roundMs),
  };
}

/** Turns the rounds of one implementation into its results. */
export function summarise(samples: Record<Scenario, RoundSample[]>): ImplementationResults {
  const graceful = samples.graceful;
  return {
    gracefulHandoverS: {
      ...stats(graceful.map((sample) => sample.takeoverS)),
      fromCommandS: stats(graceful.map((sample) => sample.fromCommandS ?? Number.NaN)),
      rounds: graceful,
    },
    crashTakeoverS: { ...stats(samples.crash.map((sample) => sample.takeoverS)), rounds: samples.crash },
  };
}

export function ratio(baseline: Stats, project: Stats): Ratio {
  const divide = (b: number, p: number): number | null => (p > 0 ? Math.round((b / p) * 100) / 100 : null);
  return { median: divide(baseline.median, project.median), max: divide(baseline.max, project.max) };
}

/** The results table: implementation × scenario with median and max, and baseline ÷ each of this library's. */
export function formatTable(
  results: Record<Implementation, ImplementationResults>,
  ratios: Record<"project" | "takeover", Record<Scenario, Ratio>>,
): string {
  const header = ["scenario", "implementation", "median", "max", "min", "rounds"];
  const rows: string[][] = [];
  for (const scenario of Object.keys(SCENARIO_KEYS) as Scenario[]) {
    const key = SCENARIO_KEYS[scenario];
    for (const impl of ["project", "takeover", "baseline"] as const) {
      const figures = results[impl][key];
      rows.push([
        SCENARIO_TITLES[scenario],
        impl,
        seconds(figures.median),
        seconds(figures.max),
        seconds(figures.min),
        String(figures.samplesS.length),
      ]);
    }
    for (const impl of ["project", "takeover"] as const)
      rows.push([
        SCENARIO_TITLES[scenario],
        `baseline/${impl}`,
        times(ratios[impl][scenario].median),
        times(ratios[impl][scenario].max),
        "",
        "",
      ]);
  }
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: string[]): string =>
    cells
      .map((cell, column) => (column < 2 ? cell.padEnd(widths[column] ?? 0) : cell.padStart(widths[column] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((width) => "-".repeat(width))), ...rows.map(line)].join("\n");
}

function seconds(value: number): string {
  return `${value.toFixed(2)} s`;
}

function times(value: number | null): string {
  return value === null ? "n/a" : `x${value.toFixed(1)}`;
}
