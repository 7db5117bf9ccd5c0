/**
 * Structured events of the app: every leadership change and step outcome, so a person can see who led when and why a
 * step stopped. They are logged as one line each — `[coordinator-event] {json}` — through the function's
 * `InvocationContext`, so they reach Application Insights in Azure (query traces for the prefix) and the local
 * runner's event log.
 */
import type { CoordinationEvent } from "../coordination/ports/events.js";
import type { StepReport } from "../coordination/step/step.js";
import type { LeadershipLostReason } from "../library/errors.js";
import type { LeadershipEvent } from "../library/leadership/events.js";

/** Prefix of an event log line. */
export const EVENT_LOG_PREFIX = "[coordinator-event] ";

/** Fields every step event carries. */
interface EventBase {
  /** The instance that emitted it. */
  instanceId: string;
  /** Wall-clock ms. */
  atMs: number;
}

/** What started a step: the timer, or a wake-up message (with why it was sent and how long it waited). */
export type StepTrigger =
  | { trigger: "timer" }
  | {
      trigger: "wake";
      /** The wake-up's reason (`job-submitted`, `results-arrived`, …). */
      wakeReason: string;
      wakeJobId?: string;
      /** From sending the wake-up to handling it. */
      wakeDelayMs: number;
      /** Which follow-up in a chain this was (from 1), when it was one. */
      wakeFollowUp?: number;
    };

/** This instance won the lease and starts a coordination step. */
export type StepStartedEvent = EventBase & { type: "step-started"; epoch: number } & StepTrigger;

/** The step ran to its end (budget spent or nothing left to do) while leadership held; its report. */
export type StepCompletedEvent = EventBase & { type: "step-completed"; epoch: number } & StepReport;

/** The step ended early: leadership was lost (the term's reason), a newer leader fenced it out, or it failed. */
export interface StepAbortedEvent extends EventBase {
  type: "step-aborted";
  /** The term's epoch; none when the attempt failed before a term began. */
  epoch: number | undefined;
  reason: LeadershipLostReason | "fenced" | "error";
  /** What happened, for a person. */
  detail: string | undefined;
}

/**
 * No step ran: another instance leads (who, when known), the app is shutting down, or this process already runs one.
 */
export type StepSkippedEvent = EventBase & { type: "step-skipped" } & (
    | ({ leader: string | undefined; leaderEpoch: number | undefined } & StepTrigger)
    | { reason: "shutdown"; trigger: StepTrigger["trigger"] }
    | { reason: "coalesced"; trigger: "wake"; wakeReason: string; wakeJobId: string | undefined }
  );

/** Every event the app emits: the library's leadership events, its own step events and the coordination events. */
export type AppEvent =
  LeadershipEvent | StepStartedEvent | StepCompletedEvent | StepAbortedEvent | StepSkippedEvent | CoordinationEvent;

/** Event types the app emits. */
export type AppEventType = AppEvent["type"];

/** The epoch an event names as its own (a term's; a step-skipped event names the leader's as `leaderEpoch`), if any. */
export function eventEpoch(event: AppEvent): number | undefined {
  return "epoch" in event ? event.epoch : undefined;
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
    if (typeof value === "object" && value !== null && "type" in value && "instanceId" in value && "atMs" in value)
      return value as AppEvent;
  } catch {
    // not an event line after all
  }
  return undefined;
}
