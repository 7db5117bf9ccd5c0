import { OP_GROUPS, round, type OpDetail, type OpGroup, type OpsSummary } from "./opsBreakdown";

/** The JSON report of `bench:throughput` and the tables it prints. */

/** The targets. */
export const TARGETS = { ratioMin: 0.7, opsPerItemMax: 6 } as const;

/** One timed run of one implementation. */
export interface RoundReport {
  round: number;
  /** Position in the round: 1 ran first. */
  order: number;
  ok: boolean;
  problem?: string;
  items: number;
  durationS: number | undefined;
  itemsPerS: number | undefined;
  opsPerItem: number;
  [extra: string]: unknown;
}

/** One implementation over every round. */
export interface ImplementationReport {
  items: number;
  /** Median over the rounds that completed. */
  itemsPerS: number | undefined;
  /** Median over the rounds that completed, s. */
  durationS: number | undefined;
  /** Requests in the timed windows of every round, divided by the items of every round. */
  opsPerItem: number;
  opsBreakdown: Record<OpGroup, number>;
  /** Per detailed operation: requests, failed answers, messages returned, and requests per item. */
  opsDetail: Record<string, OpDetail & { perItem: number }>;
  /** Mean messages per non-empty receive. */
  receiveBatch: OpsSummary["receiveBatch"];
  rounds: RoundReport[];
  [extra: string]: unknown;
}

/** Median of the defined values; undefined when there are none. */
export function median(values: readonly (number | undefined)[]): number | undefined {
  const sorted = values.filter((value): value is number => value !== undefined).sort((a, b) => a - b);
  if (sorted.length === 0) return undefined;
  const middle = Math.floor(sorted.length / 2);
  const upper = sorted[middle] ?? 0;
  return sorted.length % 2 === 1 ? upper : ((sorted[middle - 1] ?? upper) + upper) / 2;
}

/** The implementation's report from its rounds and the summary of its counted operations. */
export function implementationReport(items: number, rounds: RoundReport[], ops: OpsSummary, extra: Record<string, unknown> = {}): ImplementationReport {
  const totalItems = rounds.reduce((sum, entry) => sum + entry.items, 0);
  const opsDetail = Object.fromEntries(Object.entries(ops.detail).map(([name, detail]) => [name, { ...detail, perItem: round(detail.requests / Math.max(1, totalItems), 3) }]));
  // A failed round did not process every item: its rate says nothing.
  const completed = rounds.filter((entry) => entry.ok);
  const itemsPerS = median(completed.map((entry) => entry.itemsPerS));
  const durationS = median(completed.map((entry) => entry.durationS));
  return {
    items,
    itemsPerS: itemsPerS === undefined ? undefined : round(itemsPerS, 1),
    durationS: durationS === undefined ? undefined : round(durationS, 2),
    opsPerItem: ops.perItem,
    opsBreakdown: ops.groupsPerItem,
    opsDetail,
    receiveBatch: ops.receiveBatch,
    ...extra,
    rounds,
  };
}

const GROUP_LABELS: Record<OpGroup, string> = {
  workSend: "work send",
  workReceive: "work receive",
  workDelete: "work delete",
  resultsSend: "results send",
  resultsReceive: "results receive",
  resultsDelete: "results delete",
  blobRead: "blob reads",
  blobWrite: "blob writes",
  lease: "lease ops",
  polling: "polling (empty receives)",
  other: "other",
};

/** The throughput and operations tables. */
export function throughputTable(baseline: ImplementationReport, project: ImplementationReport, ratio: number | undefined): string[] {
  const lines: string[] = [];
  const fmt = (value: number | undefined, digits: number): string => (value === undefined ? "—" : value.toFixed(digits));
  lines.push(`${"".padEnd(26)}${"baseline".padStart(12)}${"project".padStart(12)}`);
  const row = (label: string, a: string, b: string): void => {
    lines.push(`${label.padEnd(26)}${a.padStart(12)}${b.padStart(12)}`);
  };
  row("items per job", String(baseline.items), String(project.items));
  row("items/s (median)", fmt(baseline.itemsPerS, 1), fmt(project.itemsPerS, 1));
  row("job time, s (median)", fmt(baseline.durationS, 2), fmt(project.durationS, 2));
  row("storage ops per item", fmt(baseline.opsPerItem, 2), fmt(project.opsPerItem, 2));
  for (const group of OP_GROUPS) row(`  ${GROUP_LABELS[group]}`, fmt(baseline.opsBreakdown[group], 3), fmt(project.opsBreakdown[group], 3));
  row("msgs per work receive", fmt(baseline.receiveBatch.work, 1), fmt(project.receiveBatch.work, 1));
  row("msgs per results receive", fmt(baseline.receiveBatch.results, 1), fmt(project.receiveBatch.results, 1));
  lines.push("");
  const ratioMet = ratio !== undefined && ratio >= TARGETS.ratioMin;
  const opsMet = project.opsPerItem <= TARGETS.opsPerItemMax;
  lines.push(`Throughput ratio project/baseline: ${fmt(ratio, 2)}× (target ≥ ${TARGETS.ratioMin}×) — ${ratioMet ? "met" : "NOT met"}`);
  lines.push(`Project storage ops per item: ${fmt(project.opsPerItem, 2)} (target ≤ ${TARGETS.opsPerItemMax}) — ${opsMet ? "met" : "NOT met"}`);
  return lines;
}

/** The project's detailed operations, most frequent first. */
export function detailTable(title: string, report: ImplementationReport): string[] {
  const entries = Object.entries(report.opsDetail).sort(([, a], [, b]) => b.requests - a.requests);
  return [
    title,
    `  ${"operation".padEnd(26)}${"requests".padStart(10)}${"per item".padStart(10)}${"failed".padStart(8)}`,
    ...entries.map(([name, detail]) => `  ${name.padEnd(26)}${String(detail.requests).padStart(10)}${detail.perItem.toFixed(3).padStart(10)}${String(detail.failed).padStart(8)}`),
  ];
}
