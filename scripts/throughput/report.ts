import { costPerMillion, requestsByPriceClass, type CostPerMillion } from "./cost";
import { round, summarizeOps, type OpsSummary, type StorageRoles } from "./opsBreakdown";
import type { RequestCount } from "./requestCounter";

/** The JSON report of `bench:throughput`, its targets, and the tables it prints. */

/** Issue 9's targets. */
export const TARGETS = {
  smallVsPerItemMin: 2,
  smallVsBatchedMin: 0.8,
  smallOpsPerItemMax: 0.5,
  smallExecutionsPerItemMax: 0.1,
  blobVsPerItemMin: 0.9,
  submitToFirstDispatchMedianMaxS: 2,
  leaderRssGrowthMaxMiB: 40,
} as const;

export type Implementation = "project" | "perItem" | "batched";
export const IMPLEMENTATIONS: readonly Implementation[] = ["project", "perItem", "batched"];

/** One timed run of one implementation. */
export interface RunSample {
  round: number;
  /** Position in the round: 1 ran first. */
  order: number;
  ok: boolean;
  problem?: string;
  items: number;
  itemsPerS: number | undefined;
  submitToFirstDispatchS: number | undefined;
  submitToCompletedS: number | undefined;
  counts: RequestCount[];
  /** Executions by function (the baselines': their worker's messages, as if each were a function execution). */
  executions: Record<string, number>;
  /** Billed execution time, GB-s (the project only). */
  gbSeconds: number | undefined;
  loadAverage1m: [number, number];
  extra?: Record<string, unknown>;
}

/** Median, min and max of the defined values. */
export interface Spread {
  median: number | undefined;
  min: number | undefined;
  max: number | undefined;
  values: number[];
}

/** Median of the defined values; undefined when there are none. */
export function median(values: readonly (number | undefined)[]): number | undefined {
  const sorted = values.filter((value): value is number => value !== undefined).sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const middle = Math.floor(sorted.length / 2);
  const upper = sorted[middle] ?? 0;
  return sorted.length % 2 === 1 ? upper : ((sorted[middle - 1] ?? upper) + upper) / 2;
}

export function spread(values: readonly (number | undefined)[], digits: number): Spread {
  const defined = values.filter((value): value is number => value !== undefined).map((value) => round(value, digits));
  const mid = median(defined);
  return {
    median: mid === undefined ? undefined : round(mid, digits),
    min: defined.length === 0 ? undefined : Math.min(...defined),
    max: defined.length === 0 ? undefined : Math.max(...defined),
    values: defined,
  };
}

/** One implementation in one scenario, over its rounds. */
export interface ImplementationSummary {
  /** Median over the rounds that completed. */
  itemsPerS: number | undefined;
  submitToFirstDispatchS: Spread;
  submitToCompletedS: Spread;
  /** Requests of every round, divided by the items of every round. */
  opsPerItem: number;
  opsBreakdown: OpsSummary["groupsPerItem"];
  opsDetail: Record<string, { requests: number; failed: number; perItem: number }>;
  executionsPerItem: number;
  executionsByFunction: Record<string, number>;
  gbSecondsPerItem: number | undefined;
  costPerMillionItemsUSD: number;
  cost: CostPerMillion;
  rounds: (Omit<RunSample, "counts"> & { counts: undefined })[];
}

/** Sums an implementation's rounds. */
export function summarizeImplementation(samples: readonly RunSample[], roles: StorageRoles): ImplementationSummary {
  const items = samples.reduce((sum, sample) => sum + sample.items, 0);
  const counts = samples.flatMap((sample) => sample.counts);
  const ops = summarizeOps(counts, { items, roles });
  const executionsByFunction: Record<string, number> = {};
  for (const sample of samples)
    for (const [name, count] of Object.entries(sample.executions))
      executionsByFunction[name] = (executionsByFunction[name] ?? 0) + count;
  const executions = Object.values(executionsByFunction).reduce((sum, count) => sum + count, 0);
  const gbSeconds = samples.every((sample) => sample.gbSeconds !== undefined)
    ? samples.reduce((sum, sample) => sum + (sample.gbSeconds ?? 0), 0)
    : undefined;
  const cost = costPerMillion(requestsByPriceClass(counts), executions, items, gbSeconds);
  const completed = samples.filter((sample) => sample.ok);
  const itemsPerS = median(completed.map((sample) => sample.itemsPerS));
  return {
    itemsPerS: itemsPerS === undefined ? undefined : round(itemsPerS, 1),
    submitToFirstDispatchS: spread(
      completed.map((sample) => sample.submitToFirstDispatchS),
      2,
    ),
    submitToCompletedS: spread(
      completed.map((sample) => sample.submitToCompletedS),
      2,
    ),
    opsPerItem: ops.perItem,
    opsBreakdown: ops.groupsPerItem,
    opsDetail: Object.fromEntries(
      Object.entries(ops.detail).map(([name, detail]) => [
        name,
        { requests: detail.requests, failed: detail.failed, perItem: round(detail.requests / Math.max(1, items), 4) },
      ]),
    ),
    executionsPerItem: round(executions / Math.max(1, items), 4),
    executionsByFunction,
    gbSecondsPerItem: gbSeconds === undefined ? undefined : round(gbSeconds / Math.max(1, items), 5),
    costPerMillionItemsUSD: cost.totalUSD,
    cost,
    rounds: samples.map((sample) => ({ ...sample, counts: undefined })),
  };
}

/** A scenario's figures: the project's, beside both baselines', and its targets. */
export interface ScenarioReport {
  items: number;
  meanItemBytes: number;
  ratioVsPerItem: number | undefined;
  ratioVsBatched: number | undefined;
  opsPerItem: number;
  executionsPerItem: number;
  costPerMillionItemsUSD: number;
  submitToFirstDispatchS: Spread;
  submitToCompletedS: Spread;
  itemsPerS: Record<Implementation, number | undefined>;
  targets: Record<string, { target: string; value: number | undefined; met: boolean }>;
  project: ImplementationSummary;
  perItem: ImplementationSummary;
  batched: ImplementationSummary;
}

/** Builds a scenario's report from its summaries. */
export function scenarioReport(
  name: "small" | "blob",
  items: number,
  meanItemBytes: number,
  summaries: Record<Implementation, ImplementationSummary>,
): ScenarioReport {
  const { project, perItem, batched } = summaries;
  const ratio = (other: ImplementationSummary): number | undefined =>
    project.itemsPerS !== undefined && other.itemsPerS !== undefined && other.itemsPerS > 0
      ? round(project.itemsPerS / other.itemsPerS, 3)
      : undefined;
  const ratioVsPerItem = ratio(perItem);
  const ratioVsBatched = ratio(batched);
  const atLeast = (value: number | undefined, min: number): boolean => value !== undefined && value >= min;
  const atMost = (value: number | undefined, max: number): boolean => value !== undefined && value <= max;
  const firstDispatch = project.submitToFirstDispatchS.median;
  const targets: ScenarioReport["targets"] =
    name === "small"
      ? {
          ratioVsPerItem: {
            target: `≥ ${TARGETS.smallVsPerItemMin}×`,
            value: ratioVsPerItem,
            met: atLeast(ratioVsPerItem, TARGETS.smallVsPerItemMin),
          },
          ratioVsBatched: {
            target: `≥ ${TARGETS.smallVsBatchedMin}×`,
            value: ratioVsBatched,
            met: atLeast(ratioVsBatched, TARGETS.smallVsBatchedMin),
          },
          opsPerItem: {
            target: `≤ ${TARGETS.smallOpsPerItemMax}`,
            value: project.opsPerItem,
            met: atMost(project.opsPerItem, TARGETS.smallOpsPerItemMax),
          },
          executionsPerItem: {
            target: `≤ ${TARGETS.smallExecutionsPerItemMax}`,
            value: project.executionsPerItem,
            met: atMost(project.executionsPerItem, TARGETS.smallExecutionsPerItemMax),
          },
          submitToFirstDispatchMedianS: {
            target: `≤ ${TARGETS.submitToFirstDispatchMedianMaxS} s`,
            value: firstDispatch,
            met: atMost(firstDispatch, TARGETS.submitToFirstDispatchMedianMaxS),
          },
        }
      : {
          ratioVsPerItem: {
            target: `≥ ${TARGETS.blobVsPerItemMin}×`,
            value: ratioVsPerItem,
            met: atLeast(ratioVsPerItem, TARGETS.blobVsPerItemMin),
          },
          submitToFirstDispatchMedianS: {
            target: `≤ ${TARGETS.submitToFirstDispatchMedianMaxS} s`,
            value: firstDispatch,
            met: atMost(firstDispatch, TARGETS.submitToFirstDispatchMedianMaxS),
          },
        };
  return {
    items,
    meanItemBytes: round(meanItemBytes, 1),
    ratioVsPerItem,
    ratioVsBatched,
    opsPerItem: project.opsPerItem,
    executionsPerItem: project.executionsPerItem,
    costPerMillionItemsUSD: project.costPerMillionItemsUSD,
    submitToFirstDispatchS: project.submitToFirstDispatchS,
    submitToCompletedS: project.submitToCompletedS,
    itemsPerS: { project: project.itemsPerS, perItem: perItem.itemsPerS, batched: batched.itemsPerS },
    targets,
    project,
    perItem,
    batched,
  };
}

/** The console table of one scenario. */
export function scenarioTable(name: string, report: ScenarioReport): string[] {
  const fmt = (value: number | undefined, digits: number): string =>
    value === undefined ? "—" : value.toFixed(digits);
  const lines = [`Scenario ${name}: ${report.items} items (${report.meanItemBytes} bytes each on average)`];
  const row = (label: string, values: [string, string, string]): void => {
    lines.push(`  ${label.padEnd(34)}${values.map((value) => value.padStart(12)).join("")}`);
  };
  row("", ["project", "per-item", "batched"]);
  const each = (pick: (summary: ImplementationSummary) => string): [string, string, string] => [
    pick(report.project),
    pick(report.perItem),
    pick(report.batched),
  ];
  row(
    "items/s (median)",
    each((s) => fmt(s.itemsPerS, 1)),
  );
  row(
    "submit → first dispatch, s (median)",
    each((s) => fmt(s.submitToFirstDispatchS.median, 2)),
  );
  row(
    "submit → completed, s (median)",
    each((s) => fmt(s.submitToCompletedS.median, 2)),
  );
  row(
    "storage ops per item",
    each((s) => fmt(s.opsPerItem, 3)),
  );
  row(
    "executions per item",
    each((s) => fmt(s.executionsPerItem, 4)),
  );
  row(
    "USD per million items",
    each((s) => fmt(s.costPerMillionItemsUSD, 3)),
  );
  row(
    "  + execution time (GB-s) estimate",
    each((s) => fmt(s.cost.computeEstimateUSD, 3)),
  );
  for (const [target, entry] of Object.entries(report.targets))
    lines.push(`  target ${target} ${entry.target}: ${fmt(entry.value, 3)} — ${entry.met ? "met" : "NOT met"}`);
  return lines;
}
