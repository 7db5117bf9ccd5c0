import { round, type OpsSummary } from "./opsBreakdown";
import type { ProjectRunResult } from "./projectRun";

/**
 * The leader-memory job: one large job (100,000 items by default) through the project, for the peak RSS of the
 * instance(s) that led, of one that did not, and the size of the job's state blob. When the measured throughput says
 * it would take longer than allowed, a smaller job runs instead and the report says so and extrapolates the state
 * size (it grows linearly: two bitmaps of one bit per item) — never the RSS, which is reported as measured.
 */

/** What to run. */
export interface MemoryPlan {
  requestedItems: number;
  items: number;
  /** True when a smaller job than requested runs. */
  reduced: boolean;
  estimatedS: number | undefined;
  maxWaitS: number;
  note: string;
}

/** Chooses the memory job's size from the measured throughput (items/s). */
export function planMemoryJob(requestedItems: number, maxMinutes: number, itemsPerS: number | undefined): MemoryPlan {
  const limitS = maxMinutes * 60;
  // Setup before the job: instances starting and the runner uploading input blobs (one item in ten), roughly.
  const estimate = (items: number): number | undefined => (itemsPerS === undefined || itemsPerS <= 0 ? undefined : 15 + items / 2000 + items / itemsPerS);
  const estimatedS = estimate(requestedItems);
  if (estimatedS === undefined || estimatedS <= limitS) {
    const maxWaitS = Math.ceil(Math.max(300, (estimatedS ?? limitS) * 3));
    return { requestedItems, items: requestedItems, reduced: false, estimatedS, maxWaitS, note: `Memory job: ${requestedItems} items${estimatedS === undefined ? "" : `, estimated ${Math.round(estimatedS)} s from the measured throughput`}…` };
  }
  const items = Math.max(1000, Math.floor(((itemsPerS ?? 0) * limitS * 0.8) / 1000) * 1000);
  const reducedS = estimate(items) ?? limitS;
  return {
    requestedItems,
    items,
    reduced: true,
    estimatedS,
    maxWaitS: Math.ceil(Math.max(300, reducedS * 3)),
    note: `Memory job: ${requestedItems} items would take about ${Math.round(estimatedS / 60)} min at the measured ${itemsPerS?.toFixed(0) ?? "?"} items/s (limit --memory-max-minutes ${maxMinutes}); running ${items} items instead and extrapolating the state size.`,
  };
}

/** The memory job as reported. */
export function memoryJobReport(run: ProjectRunResult, plan: MemoryPlan, ops: OpsSummary) {
  const mib = (kib: number | undefined): number | undefined => (kib === undefined ? undefined : round(kib / 1024, 1));
  const instances = run.instances.map((instance) => ({ name: instance.name, pid: instance.pid, termsLed: instance.termsLed, peakRssMiB: mib(instance.peakRssKiB) }));
  const peak = (list: typeof instances): number | undefined => {
    const values = list.map((instance) => instance.peakRssMiB).filter((value): value is number => value !== undefined);
    return values.length === 0 ? undefined : Math.max(...values);
  };
  const leaders = instances.filter((instance) => instance.termsLed > 0);
  const followers = instances.filter((instance) => instance.termsLed === 0);
  const bytesPerItem = run.stateBlobBytes === undefined ? undefined : run.stateBlobBytes / run.items;
  return {
    ok: run.ok,
    problem: run.problem,
    requestedItems: plan.requestedItems,
    items: run.items,
    reduced: plan.reduced,
    note: plan.reduced ? plan.note : undefined,
    estimatedS: plan.estimatedS === undefined ? undefined : Math.round(plan.estimatedS),
    durationS: run.durationS === undefined ? undefined : round(run.durationS, 1),
    itemsPerS: run.itemsPerS === undefined ? undefined : round(run.itemsPerS, 1),
    wallS: round(run.wallS, 1),
    matches: run.matches,
    opsPerItem: ops.perItem,
    opsBreakdown: ops.groupsPerItem,
    stateBlobBytes: run.stateBlobBytes,
    stateBytesPerItem: bytesPerItem === undefined ? undefined : round(bytesPerItem, 4),
    stateBlobBytesAtRequestedItems: bytesPerItem === undefined ? undefined : plan.reduced ? Math.round(bytesPerItem * plan.requestedItems) : run.stateBlobBytes,
    leaderPeakRssMiB: peak(leaders),
    nonLeaderPeakRssMiB: peak(followers),
    instances,
    eventsPath: run.eventsPath,
  };
}

/** The memory job's lines for the console. */
export function memoryTable(report: ReturnType<typeof memoryJobReport>): string[] {
  const value = (number: number | undefined, unit: string): string => (number === undefined ? "—" : `${number} ${unit}`);
  const lines = [`Leader memory job: ${report.items} items${report.reduced ? ` (reduced from ${report.requestedItems}; see note)` : ""} — ${report.ok ? "completed" : `FAILED: ${report.problem ?? "?"}`}`];
  if (report.note !== undefined) lines.push(`  ${report.note}`);
  lines.push(`  job time ${value(report.durationS, "s")}, ${value(report.itemsPerS, "items/s")}, ${report.opsPerItem.toFixed(2)} storage ops/item, aggregate matches: ${report.matches ? "yes" : "no"}`);
  for (const instance of report.instances) lines.push(`  ${instance.name.padEnd(12)} pid ${String(instance.pid).padEnd(8)} ${instance.termsLed > 0 ? `led ${instance.termsLed} term(s)` : "never led".padEnd(14)}  peak RSS ${value(instance.peakRssMiB, "MiB")}`);
  lines.push(`  leader peak RSS ${value(report.leaderPeakRssMiB, "MiB")}; non-leader ${value(report.nonLeaderPeakRssMiB, "MiB")}`);
  lines.push(`  job state blob ${value(report.stateBlobBytes, "bytes")} (${value(report.stateBytesPerItem, "bytes/item")})${report.reduced ? `; at ${report.requestedItems} items ≈ ${value(report.stateBlobBytesAtRequestedItems, "bytes")} (extrapolated)` : ""}`);
  return lines;
}
