import { type AppEvent } from "azure-leader-coordinator/internal";
import type { HttpRoute } from "./httpTrigger.js";

/**
 * What an instance process writes on stdout, one JSON object per line, and how the orchestrator reads it back.
 * Anything else on stdout (a dependency's stray print to the console) is read as a plain log line, never dropped.
 */

/** A log line of the host, the library or a function. */
export interface LogLine {
  kind: "log";
  level: string;
  functionName?: string;
  message: string;
  /** ISO-8601 with ms. */
  ts: string;
}

/** A structured app event (a `[coordinator-event] ` log line), with the process id that emitted it. */
export type EventLine = AppEvent & { kind: "event"; pid: number };

/** The host is listening. */
export interface ReadyLine {
  kind: "ready";
  pid: number;
  instanceId: string;
  functions: string[];
  httpPort?: number;
  /** The HTTP routes served on `httpPort`. */
  httpRoutes?: HttpRoute[];
}

/** The host stopped; `drained` is false when invocations were still running at the stop deadline. */
export interface StoppedLine {
  kind: "stopped";
  pid: number;
  drained: boolean;
}

/** Every kind of line. */
export type InstanceLine = LogLine | EventLine | ReadyLine | StoppedLine;

const KINDS = new Set(["log", "event", "ready", "stopped"]);

/** Parses one stdout line; a line that is not ours becomes a log line with the raw text. */
export function parseInstanceLine(line: string): InstanceLine {
  try {
    const value: unknown = JSON.parse(line);
    if (typeof value === "object" && value !== null && "kind" in value && KINDS.has(String(value.kind)))
      return value as InstanceLine;
  } catch {
    // not JSON: fall through
  }
  return { kind: "log", level: "information", message: line, ts: new Date().toISOString() };
}

/** Serialises a line for stdout. */
export function formatInstanceLine(line: InstanceLine): string {
  return `${JSON.stringify(line)}\n`;
}
