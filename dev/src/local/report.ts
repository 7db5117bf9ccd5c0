import type { Aggregate } from "./demoData.js";
import { fieldText } from "./eventLog.js";
import { eventEpoch } from "azure-leader-coordinator/internal";
import type { EventLine } from "./protocol.js";

/** Words for people: the notable events of a run and its final summary. */

/** A one-line description of a notable event, or undefined for routine ones (renewals, skipped ticks). */
export function describeEvent(event: EventLine): string | undefined {
  const who = event.instanceId;
  const epochOf = eventEpoch(event);
  const epoch = epochOf === undefined ? "" : ` (epoch ${epochOf})`;
  switch (event.type) {
    case "lease-acquired":
      return `${who} became leader${epoch}`;
    case "lease-lost":
      return `${who} lost the lease${epoch}: ${fieldText(event.reason)} ${fieldText(event.detail)}`.trimEnd();
    case "lease-released":
      return undefined;
    case "step-aborted":
      return `${who} aborted its step${epoch}: ${fieldText(event.reason)} ${fieldText(event.detail)}`.trimEnd();
    case "job-registered":
    case "job-completed":
    case "job-cancelled":
    case "job-expired":
      return `${who}: ${event.type}${typeof event.jobId === "string" ? ` ${event.jobId.slice(0, 8)}` : ""}${epoch}`;
    case "message-rejected":
      return `${who} rejected a message: ${event.reason}`;
    default:
      return undefined;
  }
}

/** The final aggregate next to the expected one, as a table. */
export function aggregateTable(actual: Aggregate | undefined, expected: Aggregate): string[] {
  const keys = [...new Set([...Object.keys(expected), ...Object.keys(actual ?? {})])].sort();
  const rows = [["key", "count", "sum", "min", "max", "expected count/sum/min/max"]];
  for (const key of keys) {
    const a = actual?.[key];
    const e = expected[key];
    rows.push([
      key,
      String(a?.count ?? "-"),
      String(a?.sum ?? "-"),
      String(a?.min ?? "-"),
      String(a?.max ?? "-"),
      e === undefined ? "(not expected)" : `${e.count}/${e.sum}/${e.min}/${e.max}`,
    ]);
  }
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  return rows.map((row) => `  ${row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join("  ")}`);
}
