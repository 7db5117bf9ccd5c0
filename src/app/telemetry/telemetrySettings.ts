import { ConfigurationError } from "../../library/errors.js";

/**
 * Where the app's OpenTelemetry goes, read from the environment (app settings in Azure, local.settings.json or the
 * shell locally). Not among the coordinator's own settings (`settings.ts`): they choose an exporter, not how the
 * coordinator behaves, and Azure sets the Application Insights ones.
 *
 * - `COORDINATOR_TELEMETRY`: `azure-monitor`, `otlp-file` or `none`. Default: `azure-monitor` when
 *   `APPLICATIONINSIGHTS_CONNECTION_STRING` is set (as the Bicep templates set it), else `none`.
 * - `COORDINATOR_TELEMETRY_FILE`: for `otlp-file`, the file OTLP/JSON lines are appended to (`/dev/stderr` for the
 *   console). Setting it alone chooses `otlp-file`.
 * - `COORDINATOR_TELEMETRY_LEVEL`: the lowest severity of log records exported: `debug`, `information` (default, as
 *   host.json's), `warning` or `error`.
 * - `APPLICATIONINSIGHTS_AUTHENTICATION_STRING`: `Authorization=AAD;ClientId=<id>` (the Functions convention, set by
 *   the Bicep templates): export with that managed identity's Entra token (Application Insights has local auth off).
 * - `OTEL_METRIC_EXPORT_INTERVAL`: ms between metric exports (OpenTelemetry's own variable). Default 60000.
 */
export type TelemetryTarget =
  | { exporter: "none" }
  | { exporter: "azure-monitor"; connectionString: string; managedIdentityClientId: string | undefined }
  | { exporter: "otlp-file"; path: string };

/** The severities a log record may have, lowest first. */
export const LOG_LEVELS = ["debug", "information", "warning", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The telemetry settings. */
export interface TelemetrySettings {
  target: TelemetryTarget;
  /** Log records below this severity are not exported. @default "information" */
  minLevel: LogLevel;
  /** Between metric exports, in ms. @default 60000 */
  metricExportIntervalMs: number;
  /** `service.name` of the records: the Function App's name (cloud_RoleName), as the host's own telemetry. */
  serviceName: string;
}

const EXPORTERS = ["azure-monitor", "otlp-file", "none"] as const;

/**
 * Every setting the telemetry reads (besides the platform's `WEBSITE_SITE_NAME`): the settings reference documents
 * each of them, and `npm run docs:check` holds the two lists equal.
 */
export const TELEMETRY_SETTING_NAMES = [
  "APPLICATIONINSIGHTS_CONNECTION_STRING",
  "APPLICATIONINSIGHTS_AUTHENTICATION_STRING",
  "COORDINATOR_TELEMETRY",
  "COORDINATOR_TELEMETRY_FILE",
  "COORDINATOR_TELEMETRY_LEVEL",
  "OTEL_METRIC_EXPORT_INTERVAL",
] as const;

/**
 * Reads the telemetry settings.
 *
 * @throws ConfigurationError naming each bad setting, its value and what is allowed.
 */
export function readTelemetrySettings(env: Record<string, string | undefined> = process.env): TelemetrySettings {
  const value = (name: (typeof TELEMETRY_SETTING_NAMES)[number] | "WEBSITE_SITE_NAME"): string | undefined => {
    const raw = env[name]?.trim();
    return raw === undefined || raw === "" ? undefined : raw;
  };
  const problems: string[] = [];
  const connectionString = value("APPLICATIONINSIGHTS_CONNECTION_STRING");
  const file = value("COORDINATOR_TELEMETRY_FILE");
  const chosen = value("COORDINATOR_TELEMETRY");
  let exporter: (typeof EXPORTERS)[number] =
    file !== undefined ? "otlp-file" : connectionString !== undefined ? "azure-monitor" : "none";
  if (chosen !== undefined) {
    const known = EXPORTERS.find((name) => name === chosen.toLowerCase());
    if (known === undefined) problems.push(`COORDINATOR_TELEMETRY="${chosen}" must be one of ${EXPORTERS.join(", ")}`);
    else exporter = known;
  }
  if (exporter === "azure-monitor" && connectionString === undefined)
    problems.push(
      "COORDINATOR_TELEMETRY=azure-monitor needs APPLICATIONINSIGHTS_CONNECTION_STRING (the Application Insights resource's connection string)",
    );
  if (exporter === "otlp-file" && file === undefined)
    problems.push(
      "COORDINATOR_TELEMETRY=otlp-file needs COORDINATOR_TELEMETRY_FILE (a file to append OTLP/JSON lines to; /dev/stderr for the console)",
    );
  const levelText = value("COORDINATOR_TELEMETRY_LEVEL") ?? "information";
  const minLevel = LOG_LEVELS.find((level) => level === levelText.toLowerCase());
  if (minLevel === undefined)
    problems.push(`COORDINATOR_TELEMETRY_LEVEL="${levelText}" must be one of ${LOG_LEVELS.join(", ")}`);
  const intervalText = value("OTEL_METRIC_EXPORT_INTERVAL") ?? "60000";
  const metricExportIntervalMs = Number(intervalText);
  if (!Number.isInteger(metricExportIntervalMs) || metricExportIntervalMs < 1000 || metricExportIntervalMs > 3_600_000)
    problems.push(`OTEL_METRIC_EXPORT_INTERVAL="${intervalText}" must be a whole number of ms from 1000 to 3600000`);
  const clientId = managedIdentityClientId(value("APPLICATIONINSIGHTS_AUTHENTICATION_STRING"), problems);
  if (problems.length > 0 || minLevel === undefined)
    throw new ConfigurationError(`Invalid telemetry settings: ${problems.join("; ")}.`);
  const target: TelemetryTarget =
    exporter === "azure-monitor" && connectionString !== undefined
      ? { exporter, connectionString, managedIdentityClientId: clientId }
      : exporter === "otlp-file" && file !== undefined
        ? { exporter, path: file }
        : { exporter: "none" };
  return {
    target,
    minLevel,
    metricExportIntervalMs,
    serviceName: value("WEBSITE_SITE_NAME") ?? "azure-leader-coordinator",
  };
}

/**
 * The managed identity's client id of `Authorization=AAD;ClientId=<id>` (the host's own convention); undefined when
 * the string is not set. `Authorization=AAD` without a ClientId means the system-assigned identity ("").
 */
function managedIdentityClientId(authentication: string | undefined, problems: string[]): string | undefined {
  if (authentication === undefined) return undefined;
  const pairs = new Map<string, string>();
  for (const part of authentication.split(";").filter((text) => text.trim() !== "")) {
    const [key, ...rest] = part.split("=");
    pairs.set((key ?? "").trim().toLowerCase(), rest.join("=").trim());
  }
  if (pairs.get("authorization")?.toUpperCase() !== "AAD") {
    problems.push(
      `APPLICATIONINSIGHTS_AUTHENTICATION_STRING must be "Authorization=AAD;ClientId=<managed identity client id>" (or "Authorization=AAD" for the system-assigned identity)`,
    );
    return undefined;
  }
  return pairs.get("clientid") ?? "";
}
