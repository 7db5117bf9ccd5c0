import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { eventEpoch } from "azure-leader-coordinator/internal";
import type { EventLine } from "./protocol.js";

/**
 * The run's event log: one JSON object per line — `ts` (ISO-8601 with ms), `instance`, `pid`, `type`, `epoch` where
 * it applies, then the event's other fields. The app's events come from the instances; `instance-started` and
 * `instance-exited` are written by the orchestrator. The timeline is drawn from these records alone.
 */

/** One line of the event log. */
export interface EventRecord {
  ts: string;
  instance: string;
  pid: number | undefined;
  type: string;
  epoch?: number;
  [field: string]: unknown;
}

/** Converts an instance's event line into a record. */
export function recordFromEventLine(line: EventLine): EventRecord {
  const fields: Record<string, unknown> = { ...line };
  for (const moved of ["kind", "atMs", "instanceId", "pid", "type", "epoch"]) Reflect.deleteProperty(fields, moved);
  const { atMs, instanceId, pid, type } = line;
  const epoch = eventEpoch(line);
  return {
    ts: new Date(atMs).toISOString(),
    instance: instanceId,
    pid,
    type,
    ...(epoch === undefined ? {} : { epoch }),
    ...fields,
  };
}

/** A field of an event as text: strings as they are, anything else as JSON ("" when absent). */
export function fieldText(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  // JSON.stringify answers undefined for functions and symbols, whatever its declared type says.
  const json = JSON.stringify(value) as string | undefined;
  return json ?? "";
}

/** Appends records to a JSON-lines file (creating its folder), and keeps them for the timeline. */
export class EventLog {
  /** Every record appended so far, in order. */
  readonly records: EventRecord[] = [];

  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
  }

  /** Appends one record. Synchronous on purpose: a few lines a second, and none lost if the process is killed. */
  append(record: EventRecord): void {
    this.records.push(record);
    appendFileSync(this.path, `${JSON.stringify(record)}\n`);
  }
}
