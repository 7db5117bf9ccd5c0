import { describe, expect, it } from "vitest";
import { ConfigurationError } from "../../src/library/errors";
import { APP_SETTING_NAMES, readSettings } from "../../src/app/settings";
import { connectionFromSettings } from "../../src/azure/clients";

describe("settings", () => {
  it("applies the documented defaults", () => {
    expect(readSettings({})).toMatchObject({
      COORDINATOR_SCHEDULE: "0 * * * * *",
      LEASE_CONTAINER: "leases",
      LEASE_BLOB: "MyLeaderCoordinatorTask",
      LEASE_DURATION_SECONDS: 15,
      LEASE_RENEW_INTERVAL_MS: 3000,
      LEASE_RENEW_DEADLINE_MS: 10_000,
      WAKE_QUEUE: "coordinator-wake",
    });
  });

  it("names every bad setting, its value and what is allowed", () => {
    const read = (): unknown =>
      readSettings({ LEASE_DURATION_SECONDS: "90", WORK_QUEUE: "Bad_Name", COORDINATOR_SCHEDULE: "* * *" });
    expect(read).toThrow(ConfigurationError);
    expect(read).toThrow(/LEASE_DURATION_SECONDS="90" must be from 15 to 60/);
    expect(read).toThrow(/WORK_QUEUE="Bad_Name" must be 3–63 lowercase letters/);
    expect(read).toThrow(/COORDINATOR_SCHEDULE="\* \* \*" must be an NCRONTAB expression with six fields/);
  });

  it("enforces renew interval < renew deadline < lease duration with the library's rule, naming the settings", () => {
    expect(() => readSettings({ LEASE_RENEW_DEADLINE_MS: "15000" })).toThrow(
      "Invalid app settings: LEASE_RENEW_DEADLINE_MS (15000) must be below LEASE_DURATION_SECONDS × 1000 (15000 ms).",
    );
    expect(() => readSettings({ LEASE_RENEW_INTERVAL_MS: "10000" })).toThrow(
      "Invalid app settings: LEASE_RENEW_INTERVAL_MS (10000) must be below LEASE_RENEW_DEADLINE_MS (10000).",
    );
    expect(() => readSettings({ LEASE_RENEW_INTERVAL_MS: "20000", LEASE_RENEW_DEADLINE_MS: "20000" })).toThrow(
      "Invalid app settings: LEASE_RENEW_INTERVAL_MS (20000) must be below LEASE_RENEW_DEADLINE_MS (20000); LEASE_RENEW_DEADLINE_MS (20000) must be below LEASE_DURATION_SECONDS × 1000 (15000 ms).",
    );
  });

  it("lists the identity connection settings among the app's setting names", () => {
    expect(APP_SETTING_NAMES).toContain("COORDINATION_STORAGE__blobServiceUri");
    expect(APP_SETTING_NAMES).toContain("LEASE_BLOB");
  });

  it("resolves a connection from a connection string or from service URIs, and explains what is missing", () => {
    expect(connectionFromSettings("X", { X: "UseDevelopmentStorage=true" })).toEqual({
      kind: "connectionString",
      connectionString: "UseDevelopmentStorage=true",
    });
    const identity = connectionFromSettings("X", {
      X__blobServiceUri: "https://a.blob.core.windows.net",
      X__queueServiceUri: "https://a.queue.core.windows.net",
      X__clientId: "id",
    });
    expect(identity.kind).toBe("identity");
    expect(() => connectionFromSettings("X", {})).toThrow(
      /set X to a connection string \(local\/Azurite only\), or X__blobServiceUri and X__queueServiceUri/,
    );
  });
});
