import { describe, expect, it } from "vitest";
import { knownSettings } from "../../scripts/verification/docsCheck";
import { checkSettingsReference } from "../../scripts/verification/docsCheck/settingsReference";
import { APP_SETTING_NAMES } from "../../src/app/settings";

/**
 * `npm run docs:check`'s settings check (issue 45): the settings reference documents exactly what the code reads, with
 * the schema's defaults and ranges. The fixture pages below each break it one way.
 */
describe("the settings reference against the code", () => {
  const known = [
    { name: "LEASE_DURATION_SECONDS", default: "15", min: 15, max: 60 },
    { name: "WORK_QUEUE", default: "work-items" },
    { name: "COORDINATION_STORAGE" },
  ];
  const table = (...rows: string[]): string =>
    ["# Settings", "", "| Setting | Default | Allowed |", "| --- | --- | --- |", ...rows, "", "After."].join("\n");

  it("passes a reference that documents every setting with its default and range", () => {
    const page = table(
      "| `LEASE_DURATION_SECONDS` | `15` | 15–60 s |",
      "| `WORK_QUEUE` | `work-items` | an Azure queue name |",
      "| `COORDINATION_STORAGE` | — | a connection string |",
    );
    expect(checkSettingsReference("settings.md", page, known)).toEqual([]);
  });

  it("names a setting the code lacks, one it does not document, a wrong default and a range it leaves out", () => {
    const page = table(
      "| `LEASE_DURATION_SECONDS` | `30` | 15–90 s |",
      "| `WORK_QUEUE` | `work-items` | an Azure queue name |",
      "| `WORK_QUEUE` | `work-items` | again |",
      "| `LEASE_SECONDS` | `15` | a setting that was renamed |",
    );
    expect(checkSettingsReference("settings.md", page, known)).toEqual([
      `settings.md:5: LEASE_DURATION_SECONDS's default is documented as "30"; the code's is "15"`,
      "settings.md:5: LEASE_DURATION_SECONDS allows 15 to 60; its Allowed column does not state both",
      "settings.md:7: WORK_QUEUE is documented twice",
      "settings.md:8: LEASE_SECONDS is documented, but the code reads no such setting",
      "settings.md: the code reads COORDINATION_STORAGE, which no settings table of the reference documents",
    ]);
  });

  it("reads only tables whose first column is Setting", () => {
    const page = ["| Name | Default |", "| --- | --- |", "| `NOT_A_SETTING` | `1` |"].join("\n");
    expect(checkSettingsReference("settings.md", page, [])).toEqual([]);
  });

  it("knows every setting the app reads: the schema's with defaults and ranges, the connection's, the telemetry's", () => {
    const settings = knownSettings();
    const names = settings.map((setting) => setting.name);
    expect(names).toEqual(expect.arrayContaining([...APP_SETTING_NAMES, "COORDINATION_STORAGE"]));
    expect(names).toEqual(expect.arrayContaining(["COORDINATOR_TELEMETRY_FILE", "OTEL_METRIC_EXPORT_INTERVAL"]));
    expect(settings.find((setting) => setting.name === "LEASE_DURATION_SECONDS")).toEqual({
      name: "LEASE_DURATION_SECONDS",
      default: "15",
      min: 15,
      max: 60,
    });
    expect(settings.find((setting) => setting.name === "COORDINATOR_SCHEDULE")).toEqual({
      name: "COORDINATOR_SCHEDULE",
      default: "0 * * * * *",
    });
  });
});
