/**
 * Structured events of the app: every leadership change and step outcome, so a person can see who led when and why a
 * step stopped. They are logged as one line each — `[coordinator-event] {json}` — through the function's
 * `InvocationContext`, so they reach Application Insights in Azure (query traces for the prefix) and the local
 * runner's event log.
 */

/** Prefix of an event log line. */
export const EVENT_LOG_PREFIX = "[coordinator-event] ";

/** Event types the app emits. Leadership types come from the library; step and job types from the coordinator. */
export type AppEventType =
  | "lease-acquired"
  | "lease-renewed"
  | "lease-lost"
  | "lease-released"
  | "leader-observed"
  | "step-started"
  | "step-completed"
  | "step-aborted"
  | "step-skipped"
  | "job-registered"
  | "job-completed"
  | "job-failed"
  | "job-cancelled"
  | "job-expired"
  | "message-rejected";

/** One event. `atMs` is wall-clock ms; `instanceId` who emitted it; other fields depend on the type. */
export interface AppEvent {
  type: AppEventType;
  instanceId: string;
  atMs: number;
  epoch?: number;
  [field: string]: unknown;
}

/** Formats an event as a log line. */
export function formatEventLine(event: AppEvent): string {
  return EVENT_LOG_PREFIX + JSON.stringify(event);
}

/** Parses a log line back into an event; undefined for any other line. */
export function parseEventLine(line: string): AppEvent | undefined {
  if (!line.startsWith(EVENT_LOG_PREFIX)) return undefined;
  try {
    const value: unknown = JSON.parse(line.slice(EVENT_LOG_PREFIX.length));
    if (typeof value === "object" && value !== null && "type" in value && "instanceId" in value && "atMs" in value) return value as AppEvent;
  } catch {
    // not an event line after all
  }
  return undefined;
}
