/**
 * What `conformance:host` sees of one host process, whichever side runs it: the invocations the scenario functions
 * reported, the host's "Executed" lines (a binding failure never reaches a function's body, but is an execution that
 * failed), and its log lines for the record.
 */

/** The two implementations compared. */
export type Side = "sdk" | "local";

/** The functions a scenario can enable (dotnet/Functions.cs, app.ts). */
export type HarnessFunction = "Work" | "Tick" | "TickStartup";

/** One start or end of an invocation, as the function reported it. */
export interface InvocationRecord {
  function: HarnessFunction;
  phase: "start" | "end";
  atMs: number;
  /** Queue message id, dequeue count, body as bound, invocations running in the process at the start. */
  id?: string;
  dequeueCount?: number;
  body?: string;
  running?: number;
  /** Timer: IsPastDue and ScheduleStatus (null when the schedule monitor is off). */
  isPastDue?: boolean;
  scheduleStatus?: { last: string; next: string; lastUpdated: string } | null;
}

/** An "Executed 'Functions.X' (Succeeded|Failed, …)" line of the host. */
export interface ExecutionRecord {
  function: string;
  ok: boolean;
  atMs: number;
  message: string;
}

/** A running (or exited) host process of either side. */
export interface HostProcess {
  readonly side: Side;
  readonly name: string;
  readonly invocations: InvocationRecord[];
  readonly executions: ExecutionRecord[];
  /** The last log lines (errors in full), for a failure's explanation. */
  readonly logs: string[];
  /** Settles when the host has started its listeners; rejects when the process exited first. */
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;
  /** SIGKILL: a crash. */
  kill(): void;
  /** A graceful stop (at most `timeoutMs`, then SIGKILL). */
  stop(timeoutMs?: number): Promise<void>;
}

const EXECUTED = /^Executed 'Functions\.(\w+)' \((Succeeded|Failed)/;

/** Reads an "Executed" line into a record, or undefined. */
export function executionOf(message: string, atMs: number): ExecutionRecord | undefined {
  const match = EXECUTED.exec(message);
  if (match?.[1] === undefined) return undefined;
  return { function: match[1], ok: match[2] === "Succeeded", atMs, message: message.split("\n")[0] ?? message };
}

/** Keeps the last 40 log lines, each cut at 500 characters. */
export function remember(logs: string[], line: string): void {
  logs.push(line.length > 500 ? `${line.slice(0, 500)}…` : line);
  if (logs.length > 40) logs.shift();
}
