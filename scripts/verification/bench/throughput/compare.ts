import { readFileSync } from "node:fs";
import { round } from "./opsBreakdown";
import type { Implementation } from "./implementations";

/**
 * The comparisons a scenario's report makes beyond one implementation's medians: the app against the batched loop
 * round by round (both ran in the same round, under the same load, so their ratio is what this shared machine can
 * compare), and this run against an earlier one (`--before`, e.g. the code before a change, on the same machine).
 */

/** One implementation's timed run in a round: just what a ratio needs. */
export interface RoundRate {
  round: number;
  ok: boolean;
  itemsPerS: number | undefined;
}

/** The ratio of `project`'s rate to `other`'s in each round where both completed, in round order. */
export function roundRatios(
  project: readonly RoundRate[],
  other: readonly RoundRate[],
): { round: number; ratio: number }[] {
  const ratios: { round: number; ratio: number }[] = [];
  for (const mine of project) {
    const theirs = other.find((sample) => sample.round === mine.round);
    if (!mine.ok || theirs?.ok !== true || mine.itemsPerS === undefined || theirs.itemsPerS === undefined) continue;
    if (theirs.itemsPerS <= 0) continue;
    ratios.push({ round: mine.round, ratio: round(mine.itemsPerS / theirs.itemsPerS, 3) });
  }
  return ratios.sort((a, b) => a.round - b.round);
}

/** A scenario's figures from an earlier run, to set beside this run's. */
export interface BeforeFigures {
  /** The report it came from, and when that run started. */
  source: string;
  startedAt: string | undefined;
  itemsPerS: number | undefined;
  roundRatioVsBatchedMedian: number | undefined;
  submitToCompletedMedianS: number | undefined;
  opsPerItem: number | undefined;
  allInUSDPerMillion: number | undefined;
}

/**
 * Reads a scenario's figures from an earlier report of this benchmark; undefined for each figure it lacks (a report
 * of an older version of the benchmark has no per-round ratios or all-in cost, or no such scenario at all).
 *
 * @throws Error when the file cannot be read or is not JSON.
 */
export function readBefore(path: string): (scenario: string) => BeforeFigures | undefined {
  const report = JSON.parse(readFileSync(path, "utf8")) as unknown;
  return (scenario) => {
    const entry = pick(report, "scenarios", scenario);
    if (entry === undefined) return undefined;
    return {
      source: path,
      startedAt: asString(pick(report, "startedAt")),
      itemsPerS: asNumber(pick(entry, "project", "itemsPerS")),
      roundRatioVsBatchedMedian: asNumber(pick(entry, "roundRatiosVsBatched", "median")),
      submitToCompletedMedianS: asNumber(pick(entry, "submitToCompletedS", "median")),
      opsPerItem: asNumber(pick(entry, "opsPerItem")),
      allInUSDPerMillion: asNumber(pick(entry, "project", "cost", "allInUSD")),
    };
  };
}

function pick(value: unknown, ...path: string[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== "object" || current === null || !(key in current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function asNumber(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function asString(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/**
 * The implementations of round `roundNo` (from 1), in the order they run: each ratio's two sides back to back, so they
 * meet the same load — the batched loop and the project, then the idle project and the idle loop —, who goes first
 * alternating between rounds; the per-item loop (in the first `perItemRounds` rounds only) after them, never between
 * two sides — at 20,000 items it takes minutes.
 */
export function roundOrder(roundNo: number, perItemRounds: number): Implementation[] {
  const pairs: Implementation[] =
    roundNo % 2 === 1
      ? ["project", "batched", "idleProject", "idleBatched"]
      : ["batched", "project", "idleBatched", "idleProject"];
  return roundNo <= perItemRounds ? [...pairs, "perItem"] : pairs;
}
