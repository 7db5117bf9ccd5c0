import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { InvariantCounts, ScenarioResult } from "./scenario";
import { SCENARIOS } from "./scenarios/index";

/** Runs the chosen scenarios one after another, sums the invariants, prints a table and writes the JSON report. */

/** Options of {@link runChaosSuite}. */
export interface ChaosSuiteOptions {
  /** Where the JSON goes; timelines and event logs go next to it. */
  outPath: string;
  quick: boolean;
  seed: number;
  /** Scenario names to run. @default all */
  only?: readonly string[];
  /** Rounds for the scenarios that have rounds. @default per scenario, fewer in quick mode */
  rounds?: number;
  /** Progress and the table. @default process.stdout */
  output?: NodeJS.WritableStream;
}

/** The JSON report. */
export interface ChaosReport {
  seed: number;
  quick: boolean;
  startedAt: string;
  durationMs: number;
  passed: boolean;
  scenarios: ScenarioResult[];
  invariants: InvariantCounts;
  /** Takeovers by break over all scenarios (terms that began after a silent holder's lease was broken). */
  takeoversByBreak: number;
}

/** Runs the suite; never throws for a failing scenario (see `passed`). */
export async function runChaosSuite(options: ChaosSuiteOptions): Promise<ChaosReport> {
  const out = options.output ?? process.stdout;
  const outPath = resolve(options.outPath);
  const outDir = dirname(outPath);
  mkdirSync(outDir, { recursive: true });
  const chosen =
    options.only === undefined ? SCENARIOS : SCENARIOS.filter((scenario) => options.only?.includes(scenario.name));
  const startedMs = Date.now();
  const scenarios: ScenarioResult[] = [];
  for (const scenario of chosen) {
    out.write(`▶ ${scenario.name}\n`);
    const result = await scenario.run({
      seed: options.seed,
      quick: options.quick,
      rounds: options.rounds,
      outDir,
      log: (line) => out.write(`${line}\n`),
    });
    scenarios.push(result);
    out.write(`${result.passed ? "✓" : "✗"} ${scenario.name} (${(result.durationMs / 1000).toFixed(0)} s)\n`);
  }
  const invariants = sumInvariants(scenarios);
  const report: ChaosReport = {
    seed: options.seed,
    quick: options.quick,
    startedAt: new Date(startedMs).toISOString(),
    durationMs: Date.now() - startedMs,
    passed: scenarios.every((scenario) => scenario.passed) && Object.values(invariants).every((count) => count === 0),
    scenarios,
    invariants,
    takeoversByBreak: scenarios.reduce((sum, scenario) => sum + scenario.takeoversByBreak, 0),
  };
  writeFileSync(outPath, `${JSON.stringify(report, null, 2)}\n`);
  out.write(`\n${formatTable(report).join("\n")}\nReport: ${outPath}\n`);
  return report;
}

/** Sums each invariant's violations over the scenarios. */
export function sumInvariants(scenarios: readonly ScenarioResult[]): InvariantCounts {
  const total: InvariantCounts = {
    overlappingSteps: 0,
    lostItems: 0,
    doubleCounted: 0,
    unreportedBadItems: 0,
    staleWrites: 0,
    lateLeaders: 0,
  };
  for (const scenario of scenarios)
    for (const key of Object.keys(total) as (keyof InvariantCounts)[]) total[key] += scenario.invariants[key];
  return total;
}

/** The summary table: one row per scenario, then the totals. */
export function formatTable(report: ChaosReport): string[] {
  const header = [
    "scenario",
    "faults",
    "result",
    "time",
    "overlap",
    "lost",
    "double",
    "unreported",
    "stale",
    "late leader",
    "takeovers",
  ];
  const rows = report.scenarios.map((s) => [
    s.name,
    String(s.faultsInjected),
    s.passed ? "passed" : "FAILED",
    `${(s.durationMs / 1000).toFixed(0)} s`,
    ...counts(s.invariants),
    String(s.takeoversByBreak),
  ]);
  rows.push([
    "total",
    String(report.scenarios.reduce((sum, s) => sum + s.faultsInjected, 0)),
    report.passed ? "passed" : "FAILED",
    `${(report.durationMs / 1000).toFixed(0)} s`,
    ...counts(report.invariants),
    String(report.takeoversByBreak),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? "").length)),
  );
  const line = (cells: readonly string[]): string =>
    cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join("  ");
  const failures = report.scenarios.flatMap((s) => s.violations.map((violation) => `  ${s.name}: ${violation}`));
  return [
    line(header),
    line(widths.map((width) => "-".repeat(width))),
    ...rows.map(line),
    ...(failures.length > 0 ? ["", "Violations:", ...failures] : []),
  ];
}

function counts(invariants: InvariantCounts): string[] {
  return [
    invariants.overlappingSteps,
    invariants.lostItems,
    invariants.doubleCounted,
    invariants.unreportedBadItems,
    invariants.staleWrites,
    invariants.lateLeaders,
  ].map(String);
}
