import { describe, expect, it } from "vitest";
import { ConfigurationError } from "../../src/library/errors";
import { readTelemetrySettings } from "../../src/app/telemetry/telemetrySettings";
import { setupTelemetry } from "../../src/app/telemetry/setupTelemetry";
import { Telemetry } from "../../src/app/telemetry/telemetry";

const CONNECTION = "InstrumentationKey=00000000-0000-4000-8000-000000000001;IngestionEndpoint=https://example.invalid/";

describe("telemetry settings: where the app's OpenTelemetry goes", () => {
  it("exports nothing by default: no connection string, no file", () => {
    expect(readTelemetrySettings({})).toEqual({
      target: { exporter: "none" },
      minLevel: "information",
      metricExportIntervalMs: 60_000,
      serviceName: "azure-leader-coordinator",
    });
    expect(setupTelemetry({})).toBe(Telemetry.off);
  });

  it("exports to Application Insights when the connection string is set, with the identity of the authentication string", async () => {
    const settings = readTelemetrySettings({
      APPLICATIONINSIGHTS_CONNECTION_STRING: CONNECTION,
      APPLICATIONINSIGHTS_AUTHENTICATION_STRING: "ClientId=11111111-2222-3333-4444-555555555555;Authorization=AAD",
      WEBSITE_SITE_NAME: "func-leader-swedencentral-0-abc",
    });
    expect(settings.target).toEqual({
      exporter: "azure-monitor",
      connectionString: CONNECTION,
      managedIdentityClientId: "11111111-2222-3333-4444-555555555555",
    });
    expect(settings.serviceName).toBe("func-leader-swedencentral-0-abc");
    expect(
      readTelemetrySettings({
        APPLICATIONINSIGHTS_CONNECTION_STRING: CONNECTION,
        APPLICATIONINSIGHTS_AUTHENTICATION_STRING: "Authorization=AAD",
      }).target,
    ).toMatchObject({ managedIdentityClientId: "" });
    expect(readTelemetrySettings({ APPLICATIONINSIGHTS_CONNECTION_STRING: CONNECTION }).target).toMatchObject({
      managedIdentityClientId: undefined,
    });
    const telemetry = setupTelemetry({ APPLICATIONINSIGHTS_CONNECTION_STRING: CONNECTION });
    expect(telemetry.exporting).toBe(true);
    await telemetry.shutdown();
  });

  it("a file chooses OTLP/JSON lines; COORDINATOR_TELEMETRY=none turns export off even with a connection string", () => {
    expect(readTelemetrySettings({ COORDINATOR_TELEMETRY_FILE: "/tmp/otlp.jsonl" }).target).toEqual({
      exporter: "otlp-file",
      path: "/tmp/otlp.jsonl",
    });
    expect(
      readTelemetrySettings({ APPLICATIONINSIGHTS_CONNECTION_STRING: CONNECTION, COORDINATOR_TELEMETRY: "none" })
        .target,
    ).toEqual({ exporter: "none" });
  });

  it.each([
    [
      { COORDINATOR_TELEMETRY: "console" },
      'COORDINATOR_TELEMETRY="console" must be one of azure-monitor, otlp-file, none',
    ],
    [
      { COORDINATOR_TELEMETRY: "azure-monitor" },
      "COORDINATOR_TELEMETRY=azure-monitor needs APPLICATIONINSIGHTS_CONNECTION_STRING",
    ],
    [{ COORDINATOR_TELEMETRY: "otlp-file" }, "COORDINATOR_TELEMETRY=otlp-file needs COORDINATOR_TELEMETRY_FILE"],
    [
      { COORDINATOR_TELEMETRY_LEVEL: "verbose" },
      'COORDINATOR_TELEMETRY_LEVEL="verbose" must be one of debug, information, warning, error',
    ],
    [
      { OTEL_METRIC_EXPORT_INTERVAL: "10" },
      'OTEL_METRIC_EXPORT_INTERVAL="10" must be a whole number of ms from 1000 to 3600000',
    ],
    [
      { APPLICATIONINSIGHTS_AUTHENTICATION_STRING: "ClientId=abc" },
      'APPLICATIONINSIGHTS_AUTHENTICATION_STRING must be "Authorization=AAD;ClientId=<managed identity client id>"',
    ],
  ])("refuses %j, naming the setting and what is allowed", (env, message) => {
    expect(() => readTelemetrySettings(env)).toThrow(ConfigurationError);
    expect(() => readTelemetrySettings(env)).toThrow(message);
  });
});
