import { median } from "../throughput/report";
import type { RunPrice } from "./pricing";

/**
 * `bench:peer`'s report: per scenario an entry `project` and an entry `durableTask` per variant — items/s, storage
 * requests per item by service, USD per million items, completion time, peak memory, medians over the rounds that
 * completed — the ratios project ÷ framework per round, and issue 35's targets against the framework's best variant.
 */

export type Side = "project" | "perItem" | "batched";
export const SIDES: readonly Side[] = ["project", "perItem", "batched"];

/** One run of one side. */
export interface PeerSample {
  round: number;
  /** Its place in the round's order (1 = first). */
  order: number;
  ok: boolean;
  problem?: string;
  items: number;
  completionS: number | undefined;
  itemsPerS: number | undefined;
  price: RunPrice;
  executions: Record<string, number>;
  /** The project: its leader's VmHWM; the framework: the orchestrator's worker's (the largest). MiB. */
  peakMemoryMiB: number | undefined;
  /** CPU of the instances or workers from the start to completion, s. */
  cpuS: number | undefined;
  loadAverage1m: [number, number];
  requests: Record<string, number>;
  extra?: Record<string, unknown>;
}

/** Medians of one side's completed rounds. */
export interface SideSummary {
  rounds: number;
  failed: number;
  itemsPerS: number | undefined;
  completionS: number | undefined;
  requestsPerItem: {
    blob: number | undefined;
    queue: number | undefined;
    table: number | undefined;
    total: number | undefined;
  };
  tableTransactionsPerItem: number | undefined;
  executionsPerItem: number | undefined;
  usdPerMillion: number | undefined;
  usdPerMillionBatchAsOne: number | undefined;
  peakMemoryMiB: number | undefined;
  cpuS: number | undefined;
  samples: PeerSample[];
}

const r = (value: number | undefined, digits: number): number | undefined =>
  value === undefined ? undefined : Math.round(value * 10 ** digits) / 10 ** digits;

export function summarize(samples: readonly PeerSample[]): SideSummary {
  const ok = samples.filter((sample) => sample.ok);
  const m = (pick: (sample: PeerSample) => number | undefined, digits: number): number | undefined =>
    r(median(ok.map(pick)), digits);
  return {
    rounds: samples.length,
    failed: samples.length - ok.length,
    itemsPerS: m((sample) => sample.itemsPerS, 1),
    completionS: m((sample) => sample.completionS, 2),
    requestsPerItem: {
      blob: m((sample) => sample.price.requestsPerItem.blob, 4),
      queue: m((sample) => sample.price.requestsPerItem.queue, 4),
      table: m((sample) => sample.price.requestsPerItem.table, 4),
      total: m((sample) => sample.price.requestsPerItem.total, 4),
    },
    tableTransactionsPerItem: m((sample) => sample.price.tableTransactionsPerItem, 4),
    executionsPerItem: m((sample) => sample.price.executionsPerItem, 4),
    usdPerMillion: m((sample) => sample.price.usdPerMillion, 4),
    usdPerMillionBatchAsOne: m((sample) => sample.price.usdPerMillionBatchAsOne, 4),
    peakMemoryMiB: m((sample) => sample.peakMemoryMiB, 1),
    cpuS: m((sample) => sample.cpuS, 2),
    samples: [...samples],
  };
}

/** Project ÷ framework in one round, for one variant. */
export interface RoundRatio {
  round: number;
  variant: "perItem" | "batched";
  itemsPerS: number | undefined;
  requestsPerItem: number | undefined;
  usdPerMillion: number | undefined;
  completionS: number | undefined;
}

export function roundRatios(
  project: readonly PeerSample[],
  peer: readonly PeerSample[],
  variant: RoundRatio["variant"],
): RoundRatio[] {
  const ratios: RoundRatio[] = [];
  for (const ours of project) {
    const theirs = peer.find((sample) => sample.round === ours.round);
    if (theirs === undefined || !ours.ok || !theirs.ok) continue;
    const div = (a: number | undefined, b: number | undefined, digits = 3): number | undefined =>
      a === undefined || b === undefined || b === 0 ? undefined : r(a / b, digits);
    ratios.push({
      round: ours.round,
      variant,
      itemsPerS: div(ours.itemsPerS, theirs.itemsPerS),
      requestsPerItem: div(ours.price.requestsPerItem.total, theirs.price.requestsPerItem.total, 4),
      usdPerMillion: div(ours.price.usdPerMillion, theirs.price.usdPerMillion, 4),
      completionS: div(ours.completionS, theirs.completionS),
    });
  }
  return ratios;
}

/** Issue 35's targets: medians, against the framework's best variant on each count. */
export interface TargetCheck {
  name: string;
  target: string;
  project: number | undefined;
  peerBest: number | undefined;
  peerBestVariant: string | undefined;
  ratio: number | undefined;
  met: boolean;
}

function best(
  variants: Partial<Record<"perItem" | "batched", SideSummary>>,
  pick: (summary: SideSummary) => number | undefined,
  higherIsBetter: boolean,
): [string | undefined, number | undefined] {
  let found: [string | undefined, number | undefined] = [undefined, undefined];
  for (const [name, summary] of Object.entries(variants)) {
    const value = pick(summary);
    if (value === undefined) continue;
    if (found[1] === undefined || (higherIsBetter ? value > found[1] : value < found[1])) found = [name, value];
  }
  return found;
}

export function checkTargets(
  small: { project: SideSummary; durableTask: Partial<Record<"perItem" | "batched", SideSummary>> } | undefined,
  short: { project: SideSummary; durableTask: Partial<Record<"perItem" | "batched", SideSummary>> } | undefined,
): TargetCheck[] {
  const checks: TargetCheck[] = [];
  const add = (
    name: string,
    target: string,
    scenario: typeof small,
    pick: (summary: SideSummary) => number | undefined,
    higherIsBetter: boolean,
    met: (ratio: number) => boolean,
  ): void => {
    if (scenario === undefined) return;
    const [variant, peerBest] = best(scenario.durableTask, pick, higherIsBetter);
    const project = pick(scenario.project);
    const ratio =
      project === undefined || peerBest === undefined || peerBest === 0 ? undefined : r(project / peerBest, 4);
    checks.push({
      name,
      target,
      project,
      peerBest,
      peerBestVariant: variant,
      ratio,
      met: ratio !== undefined && met(ratio),
    });
  };
  add(
    "small: items/s",
    "≥ 3× the framework's best",
    small,
    (s) => s.itemsPerS,
    true,
    (ratio) => ratio >= 3,
  );
  add(
    "small: storage requests per item",
    "≤ 1/5 of the framework's best",
    small,
    (s) => s.requestsPerItem.total,
    false,
    (ratio) => ratio <= 0.2,
  );
  add(
    "small: USD per million items",
    "lower than the framework's best",
    small,
    (s) => s.usdPerMillion,
    false,
    (ratio) => ratio < 1,
  );
  add(
    "short: completion time, s",
    "sooner than the framework's best",
    short,
    (s) => s.completionS,
    false,
    (ratio) => ratio < 1,
  );
  return checks;
}
