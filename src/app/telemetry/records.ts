import { SeverityNumber, type LogAttributes } from "@opentelemetry/api-logs";
import type { AppEvent, AppEventType } from "../events";
import type { LogLevel } from "./telemetrySettings";

/**
 * How the app's events and log lines become OpenTelemetry log records. An event is a record whose attributes are its
 * fields, one attribute each (Application Insights shows them as `customDimensions`), named by its type (the record's
 * `eventName`, and `microsoft.custom_event.name`: the attribute the Azure Monitor exporter turns into a
 * `customEvents` row with that name; other exporters keep it as an attribute). A log line is a record whose body is
 * the message and whose attributes are the logger's properties (a `traces` row in Application Insights).
 */

/** The attribute that makes the Azure Monitor exporter send a record as a custom event of that name. */
export const CUSTOM_EVENT_NAME = "microsoft.custom_event.name";

/**
 * Most bytes of one attribute value Application Insights keeps (8,192; longer ones are cut, and cut JSON no longer
 * parses): an array field is sent as a JSON array of the whole elements that fit, and `<field>Omitted` counts the rest.
 */
export const MAX_ATTRIBUTE_BYTES = 8000;

/** What a record is: its severity, body and attributes, and for an event its name. */
export interface RecordParts {
  eventName?: string;
  /** When it happened, wall-clock ms (an event's `atMs`); the time of the emit when absent. */
  timestamp?: number;
  severityNumber: SeverityNumber;
  severityText: string;
  body: string;
  attributes: LogAttributes;
}

/** The severity of each log level. */
export const SEVERITIES: Readonly<Record<LogLevel, { number: SeverityNumber; text: string }>> = {
  debug: { number: SeverityNumber.DEBUG, text: "Debug" },
  information: { number: SeverityNumber.INFO, text: "Information" },
  warning: { number: SeverityNumber.WARN, text: "Warning" },
  error: { number: SeverityNumber.ERROR, text: "Error" },
};

/**
 * The level of each event type: renewals are routine (debug, as host.json keeps them out of Application Insights),
 * outcomes someone should look at are warnings.
 */
export const EVENT_LEVELS: Readonly<Record<AppEventType, LogLevel>> = {
  "lease-acquired": "information",
  "lease-renewed": "debug",
  "lease-lost": "warning",
  "lease-released": "information",
  "leader-observed": "information",
  // A takeover replaced a silent leader: worth a look (what stopped it?), not an error.
  "lease-broken": "warning",
  "step-started": "information",
  "step-completed": "information",
  "step-aborted": "warning",
  "step-skipped": "information",
  "job-registered": "information",
  "job-completed": "information",
  "job-failed": "warning",
  "job-cancelled": "information",
  "job-expired": "warning",
  "job-pass-failed": "warning",
  "job-removed": "information",
  // A blob storage will not delete (a legal hold, an immutability policy) keeps an ended job: someone should look.
  "job-removal-failed": "warning",
  "message-rejected": "warning",
};

/** An event as a record: a custom event named by its type, its fields as attributes. */
export function eventRecord(event: AppEvent, context: LogAttributes): RecordParts {
  const level = SEVERITIES[EVENT_LEVELS[event.type]];
  return {
    eventName: event.type,
    timestamp: event.atMs,
    severityNumber: level.number,
    severityText: level.text,
    body: event.type,
    attributes: { ...context, ...toAttributes(event), [CUSTOM_EVENT_NAME]: event.type },
  };
}

/** A log line as a record: the message as its body, the logger's properties as attributes. */
export function logRecord(
  level: LogLevel,
  message: string,
  properties: Record<string, unknown> | undefined,
  context: LogAttributes,
): RecordParts {
  const severity = SEVERITIES[level];
  return {
    severityNumber: severity.number,
    severityText: severity.text,
    body: message,
    attributes: { ...context, ...toAttributes(properties ?? {}) },
  };
}

/**
 * One attribute per field: strings, numbers and booleans as they are; arrays as JSON of the whole elements that fit
 * {@link MAX_ATTRIBUTE_BYTES} (with `<field>Omitted` when some do not); other objects as JSON; undefined and null left
 * out.
 */
export function toAttributes(fields: object): LogAttributes {
  const attributes: LogAttributes = {};
  for (const [key, value] of Object.entries(fields) as [string, unknown][]) {
    if (value === undefined || value === null) continue;
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") attributes[key] = value;
    else if (Array.isArray(value)) {
      const { json, omitted } = fittingJson(value);
      attributes[key] = json;
      if (omitted > 0) attributes[`${key}Omitted`] = omitted;
    } else attributes[key] = JSON.stringify(value);
  }
  return attributes;
}

/** A JSON array of the leading elements whose JSON fits {@link MAX_ATTRIBUTE_BYTES}, and how many were left out. */
function fittingJson(values: readonly unknown[]): { json: string; omitted: number } {
  let bytes = 2;
  let kept = 0;
  for (const value of values) {
    // As an element of the array (undefined becomes null), plus its comma.
    const size = Buffer.byteLength(JSON.stringify([value])) - 2 + (kept > 0 ? 1 : 0);
    if (bytes + size > MAX_ATTRIBUTE_BYTES) break;
    bytes += size;
    kept++;
  }
  return { json: JSON.stringify(values.slice(0, kept)), omitted: values.length - kept };
}
