import { roundRatios, type BeforeFigures } from "./compare";
import { costPerMillion, requestsByPriceClass, type CostPerMillion } from "./cost";
import { round, summarizeOps, type OpsSummary, type StorageRoles } from "./opsBreakdown";
import type { Implementation } from "./implementations";
import type { RequestCount } from "./requestCounter";
import { scenarioTargets, type TargetCheck } from "./targets";

/** The JSON report of `bench:throughput` and the tables it prints; the targets are in ./targets.ts. */

export { TARGETS } from "./targets";

export { IMPLEMENTATIONS, type Implementation } from "./implementations";

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
  /** Billed execution time, GB-s (the project only): per instance activity period (./cost.ts billedGbSeconds). */
  gbSeconds: number | undefined;
  /** The same, each execution billed on its own (./cost.ts perExecutionGbSeconds): the upper bound. */
  gbSecondsUpper?: number | undefined;
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
  const sum = (pick: (sample: RunSample) => number | undefined): number | undefined =>
    samples.length > 0 && samples.every((sample) => pick(sample) !== undefined)
      ? samples.reduce((total, sample) => total + (pick(sample) ?? 0), 0)
      : undefined;
  const gbSeconds = sum((sample) => sample.gbSeconds);
  const gbSecondsUpper = sum((sample) => sample.gbSecondsUpper);
  const cost = costPerMillion(requestsByPriceClass(counts), executions, items, gbSeconds, gbSecondsUpper);
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
  /** The project's median items/s over the per-item loop's, and over the batched loop's. */
  ratioVsPerItem: number | undefined;
  ratioVsBatched: number | undefined;
  /** The project's items/s over the batched loop's in the same round, for each round both completed. */
  roundRatiosVsBatched: Spread & { rounds: { round: number; ratio: number }[] };
  /**
   * The idle project's items/s over the idle batched loop's in the same round (both idle first, their queue polling
   * backed off to 2 s when the job comes, as a deployed app's idle instances'). Beside the targets, not one of them.
   */
  roundRatiosIdle: Spread & { rounds: { round: number; ratio: number }[] };
  opsPerItem: number;
  executionsPerItem: number;
  /** Storage and executions. */
  costPerMillionItemsUSD: number;
  /** Storage, executions and execution time (GB-s, estimated): every cost counted. */
  allInCostPerMillionItemsUSD: number | undefined;
  submitToFirstDispatchS: Spread;
  submitToCompletedS: Spread;
  itemsPerS: Record<Implementation, number | undefined>;
  targets: Record<string, TargetCheck>;
  /** The same scenario's figures in an earlier run (`--before`), when given. */
  before?: BeforeFigures | undefined;
  project: ImplementationSummary;
  perItem: ImplementationSummary;
  batched: ImplementationSummary;
  idleProject: ImplementationSummary;
  idleBatched: ImplementationSummary;
}

/** Per-round ratios with their median, lowest and highest. */
function ratioSpread(
  rounds: { round: number; ratio: number }[],
): Spread & { rounds: { round: number; ratio: number }[] } {
  return {
    ...spread(
      rounds.map((entry) => entry.ratio),
      3,
    ),
    rounds,
  };
}

/** Builds a scenario's report from its summaries (and an earlier run's figures, to set beside them). */
export function scenarioReport(
  name: "small" | "blob" | "short",
  items: number,
  meanItemBytes: number,
  summaries: Record<Implementation, ImplementationSummary>,
  before?: BeforeFigures,
): ScenarioReport {
  const { project, perItem, batched, idleProject, idleBatched } = summaries;
  const ratio = (other: ImplementationSummary): number | undefined =>
    project.itemsPerS !== undefined && other.itemsPerS !== undefined && other.itemsPerS > 0
      ? round(project.itemsPerS / other.itemsPerS, 3)
      : undefined;
  const report: Omit<ScenarioReport, "targets"> = {
    items,
    meanItemBytes: round(meanItemBytes, 1),
    ratioVsPerItem: ratio(perItem),
    ratioVsBatched: ratio(batched),
    roundRatiosVsBatched: ratioSpread(roundRatios(project.rounds, batched.rounds)),
    roundRatiosIdle: ratioSpread(roundRatios(idleProject.rounds, idleBatched.rounds)),
    opsPerItem: project.opsPerItem,
    executionsPerItem: project.executionsPerItem,
    costPerMillionItemsUSD: project.costPerMillionItemsUSD,
    allInCostPerMillionItemsUSD: project.cost.allInUSD,
    submitToFirstDispatchS: project.submitToFirstDispatchS,
    submitToCompletedS: project.submitToCompletedS,
    itemsPerS: {
      project: project.itemsPerS,
      perItem: perItem.itemsPerS,
      batched: batched.itemsPerS,
      idleProject: idleProject.itemsPerS,
      idleBatched: idleBatched.itemsPerS,
    },
    ...(before === undefined ? {} : { before }),
    project,
    perItem,
    batched,
    idleProject,
    idleBatched,
  };
  return { ...report, targets: scenarioTargets(name, report) };
}

/** The console table of one scenario. */
export function scenarioTable(name: string, report: ScenarioReport): string[] {
  const fmt = (value: number | undefined, digits: number): string =>
    value === undefined ? "—" : value.toFixed(digits);
  const lines = [`Scenario ${name}: ${report.items} items (${report.meanItemBytes} bytes each on average)`];
  const row = (label: string, values: [string, string, string, string, string]): void => {
    lines.push(`  ${label.padEnd(34)}${values.map((value) => value.padStart(12)).join("")}`);
  };
  row("", ["project", "per-item", "batched", "idle app", "idle loop"]);
  // An implementation that did not run (the per-item loop after --per-item-rounds) has no figures: "—", not zeros.
  const cell = (summary: ImplementationSummary, pick: (summary: ImplementationSummary) => string): string =>
    summary.rounds.length === 0 ? "—" : pick(summary);
  const each = (pick: (summary: ImplementationSummary) => string): [string, string, string, string, string] => [
    cell(report.project, pick),
    cell(report.perItem, pick),
    cell(report.batched, pick),
    cell(report.idleProject, pick),
    cell(report.idleBatched, pick),
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
  row(
    "  = every cost counted",
    each((s) => fmt(s.cost.allInUSD, 3)),
  );
  row(
    "  (GB-s if each execution ≥ 1 s alone)",
    each((s) => fmt(s.cost.computeUpperUSD, 3)),
  );
  const ratioLine = (label: string, ratios: ScenarioReport["roundRatiosVsBatched"]): string =>
    `  ${label}, round by round: ${ratios.rounds.map((entry) => `r${entry.round} ${entry.ratio.toFixed(2)}×`).join(", ") || "—"} (median ${fmt(ratios.median, 2)}, lowest ${fmt(ratios.min, 2)})`;
  lines.push(ratioLine("project ÷ batched loop", report.roundRatiosVsBatched));
  lines.push(ratioLine("idle app ÷ idle loop (both idle first)", report.roundRatiosIdle));
  if (report.before !== undefined)
    lines.push(
      `  before (${report.before.source}): ${fmt(report.before.itemsPerS, 1)} items/s, completed ${fmt(report.before.submitToCompletedMedianS, 2)} s (median), ÷ batched ${fmt(report.before.roundRatioVsBatchedMedian, 2)}× (median), ${fmt(report.before.opsPerItem, 3)} ops/item, all in $${fmt(report.before.allInUSDPerMillion, 3)}/M`,
    );
  for (const [target, entry] of Object.entries(report.targets))
    lines.push(`  target ${target} ${entry.target}: ${fmt(entry.value, 3)} — ${entry.met ? "met" : "NOT met"}`);
  return lines;
}
