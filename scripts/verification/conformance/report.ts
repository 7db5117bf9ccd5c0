import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { loadavg } from "node:os";
import { machineInfo } from "../bench/benchSetup";
import type { Row, Verdict } from "./rows";
import type { RunResult } from "./run";

/** The table `conformance:host` prints and the JSON report it writes. */

const SHIM =
  "Microsoft.Azure.WebJobs.Extensions 3.0.6's StorageScheduleMonitor throws TypeLoadException beside Host.Storage 5.0.1; a small ScheduleMonitor (dotnet/BlobScheduleMonitor.cs) keeps the status at the same blob, azure-webjobs-hosts/timers/{hostId}/{function}/status, as JSON with ISO dates; what is past due and when it runs stays the SDK's";

/** Counts of rows per verdict. */
export function verdictCounts(rows: readonly Row[]): Record<Verdict, number> {
  const counts: Record<Verdict, number> = { agree: 0, "known difference": 0, differs: 0, "not measured": 0 };
  for (const row of rows) counts[row.verdict]++;
  return counts;
}

function cell(value: unknown): string {
  const text = value === undefined ? "—" : JSON.stringify(value);
  return text.length > 70 ? `${text.slice(0, 67)}…` : text;
}

/** Lines to print: one per row, then the counts. */
export function formatRows(rows: readonly Row[]): string[] {
  const lines: string[] = [];
  for (const row of rows) {
    lines.push(`${row.verdict.toUpperCase().padEnd(16)} ${row.id}: ${row.claim}`);
    if (row.verdict === "not measured") {
      lines.push(`                 ${row.why}`);
      continue;
    }
    lines.push(`                 SDK:   ${cell(row.sdk)}`);
    lines.push(`                 local: ${cell(row.local)}`);
    if (row.verdict !== "agree") lines.push(`                 ${row.why}`);
  }
  const counts = verdictCounts(rows);
  lines.push(
    `${rows.length} rows: ${counts.agree} agree, ${counts["known difference"]} known differences, ${counts.differs} differ, ${counts["not measured"]} not measured`,
  );
  return lines;
}

/** Writes the JSON report. */
export function writeReport(path: string, quick: boolean, result: RunResult, loadStart: number): void {
  mkdirSync(dirname(path), { recursive: true });
  const report = {
    tool: "conformance:host",
    at: new Date().toISOString(),
    quick,
    packages: result.packages,
    shim: SHIM,
    processorCount: result.processorCount,
    build: result.build,
    totalSeconds: result.totalSeconds,
    scenarioSeconds: result.scenarioSeconds,
    verdicts: verdictCounts(result.rows),
    rows: result.rows,
    machine: machineInfo({ start: loadStart, end: loadavg()[0] ?? 0 }),
  };
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}
