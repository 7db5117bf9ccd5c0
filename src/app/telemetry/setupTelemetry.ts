import { ManagedIdentityCredential } from "@azure/identity";
import { AzureMonitorLogExporter, AzureMonitorMetricExporter } from "@azure/monitor-opentelemetry-exporter";
import { BatchLogRecordProcessor } from "@opentelemetry/sdk-logs";
import { PeriodicExportingMetricReader } from "@opentelemetry/sdk-metrics";
import { instanceIdFrom } from "../context.js";
import { OtlpFileLogExporter, OtlpFileMetricExporter } from "./otlpFile.js";
import { Telemetry } from "./telemetry.js";
import { readTelemetrySettings, type TelemetrySettings } from "./telemetrySettings.js";

/**
 * Sets up the app's telemetry from the environment (see `telemetrySettings.ts`): to Application Insights through
 * the Azure Monitor exporter when APPLICATIONINSIGHTS_CONNECTION_STRING is set (with the managed identity of
 * APPLICATIONINSIGHTS_AUTHENTICATION_STRING), to a file as OTLP/JSON lines when COORDINATOR_TELEMETRY_FILE is set,
 * else nowhere ({@link Telemetry.off}).
 *
 * @throws ConfigurationError naming a bad telemetry setting.
 */
export function setupTelemetry(env: Record<string, string | undefined> = process.env): Telemetry {
  const settings = readTelemetrySettings(env);
  const exporters = exportersFor(settings);
  if (exporters === undefined) return Telemetry.off;
  return new Telemetry({
    logProcessors: [new BatchLogRecordProcessor({ exporter: exporters.logs })],
    metricReaders: [
      new PeriodicExportingMetricReader({
        exporter: exporters.metrics,
        exportIntervalMillis: settings.metricExportIntervalMs,
      }),
    ],
    minLevel: settings.minLevel,
    serviceName: settings.serviceName,
    instanceId: instanceIdFrom(env),
  });
}

function exportersFor(settings: TelemetrySettings):
  | {
      logs: AzureMonitorLogExporter | OtlpFileLogExporter;
      metrics: AzureMonitorMetricExporter | OtlpFileMetricExporter;
    }
  | undefined {
  const { target } = settings;
  if (target.exporter === "otlp-file")
    return { logs: new OtlpFileLogExporter(target.path), metrics: new OtlpFileMetricExporter(target.path) };
  if (target.exporter === "none") return undefined;
  const clientId = target.managedIdentityClientId;
  const options = {
    connectionString: target.connectionString,
    // Application Insights has local auth off (infra/): ingestion needs the identity's Entra token.
    ...(clientId === undefined
      ? {}
      : {
          credential: clientId === "" ? new ManagedIdentityCredential() : new ManagedIdentityCredential({ clientId }),
        }),
  };
  return { logs: new AzureMonitorLogExporter(options), metrics: new AzureMonitorMetricExporter(options) };
}

let shared: Telemetry | undefined;

/** The process's telemetry, set up from `process.env` on first use (handlers call this). */
export function getTelemetry(): Telemetry {
  shared ??= setupTelemetry();
  return shared;
}
