import { readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { METRIC_NAMES } from "../../src/app/telemetry/metrics";
import type { JobProgress } from "../../src/coordination/step/step";
import { EVERY_EVENT_TYPE } from "../support/eventTypes";
import {
  alertQueries as compiledAlertQueries,
  bicepAvailable,
  compiledInfra,
  describeCompiled,
  readSnapshot,
  workbookContent,
} from "./compiled";
import { REPO_ROOT } from "./paths";

/**
 * The KQL the project ships — the queries of docs/how-to/operate.md and docs/contributing/deploy-this-repository.md,
 * and those of the alert rules and the workbook in infra/ with their thresholds substituted as deployed (the Bicep
 * compiler's snapshot of main.bicepparam) — parse and bind against the schemas of Application Insights' customEvents,
 * customMetrics and traces tables, checked with Kusto's own language service (Kusto.Language, the parser and binder
 * of Azure Data Explorer, compiled to JavaScript). They read the events' and metrics' attributes (customDimensions),
 * never a substring of a log message, and name only event types, fields and metrics the app emits.
 */

/** The slice of the Kusto.Language bridge used here (the package's typings are a global namespace of ~30k lines). */
interface KustoDiagnostic {
  Severity: string;
  Message: string;
  Start: number;
}
interface KustoLanguage {
  GlobalState: { Default: { WithCluster(cluster: unknown): { WithDatabase(database: unknown): unknown } } };
  KustoCode: {
    ParseAndAnalyze(
      text: string,
      globals: unknown,
    ): { GetDiagnostics(): { Count: number; getItem(index: number): KustoDiagnostic } };
  };
  Symbols: {
    TableSymbol: { $ctor7: new (name: string, schema: string, description: string | null) => unknown };
    DatabaseSymbol: { ctor: new (name: string, members: unknown[]) => unknown };
    ClusterSymbol: { ctor: new (name: string, databases: unknown[]) => unknown };
  };
}

/** Columns common to Application Insights' tables (classic schema, as the Logs blade of the component shows them). */
const COMMON =
  "timestamp:datetime, itemType:string, customDimensions:dynamic, operation_Name:string, operation_Id:string, " +
  "operation_ParentId:string, cloud_RoleName:string, cloud_RoleInstance:string, appId:string, appName:string, " +
  "iKey:string, sdkVersion:string, itemId:string, itemCount:int";
const TABLES: Readonly<Record<string, string>> = {
  traces: `(${COMMON}, message:string, severityLevel:int, customMeasurements:dynamic)`,
  customEvents: `(${COMMON}, name:string, customMeasurements:dynamic)`,
  customMetrics: `(${COMMON}, name:string, value:real, valueCount:int, valueSum:real, valueMin:real, valueMax:real, valueStdDev:real)`,
};

/** The pages that print KQL for a user to run: operate's queries, and the more queries of the reference app's page. */
const DOCS = ["docs/how-to/operate.md", "docs/contributing/deploy-this-repository.md"];
const docEntries = DOCS.flatMap((doc) =>
  [...readFileSync(path.join(REPO_ROOT, doc), "utf8").matchAll(/^```kusto\n([\s\S]*?)^```/gm)].map((match) => ({
    where: doc,
    query: match[1] ?? "",
  })),
);
const docQueries = docEntries.map((entry) => entry.query);

let analyze: (query: string) => string[];
let alertQueries: string[] = [];
let workbookQueries: string[] = [];

beforeAll(async () => {
  const load = createRequire(__filename);
  load("@kusto/language-service-next/bridge.min.js");
  load("@kusto/language-service-next/Kusto.Language.Bridge.min.js");
  const kusto = (globalThis as unknown as { Kusto: { Language: KustoLanguage } }).Kusto.Language;
  const database = new kusto.Symbols.DatabaseSymbol.ctor(
    "appinsights",
    Object.entries(TABLES).map(([name, schema]) => new kusto.Symbols.TableSymbol.$ctor7(name, schema, null)),
  );
  const globals = kusto.GlobalState.Default.WithCluster(
    new kusto.Symbols.ClusterSymbol.ctor("cluster", [database]),
  ).WithDatabase(database);
  analyze = (query) => {
    const diagnostics = kusto.KustoCode.ParseAndAnalyze(query, globals).GetDiagnostics();
    const errors: string[] = [];
    for (let index = 0; index < diagnostics.Count; index++) {
      const diagnostic = diagnostics.getItem(index);
      if (diagnostic.Severity === "Error")
        errors.push(`${diagnostic.Message} at "${query.slice(diagnostic.Start, diagnostic.Start + 40)}"`);
    }
    return errors;
  };
  // The alert rules' and the workbook's queries as the compiler evaluates them (thresholds substituted as deployed).
  if (bicepAvailable()) {
    const main = readSnapshot(await compiledInfra(), "main");
    alertQueries = compiledAlertQueries(main);
    workbookQueries = workbookContent(main).queries;
  }
}, 600_000);

/** The text of every TypeScript file under src/. */
function sourceText(dir = path.join(REPO_ROOT, "src")): string {
  return readdirSync(dir)
    .map((name) => path.join(dir, name))
    .map((file) =>
      statSync(file).isDirectory() ? sourceText(file) : file.endsWith(".ts") ? readFileSync(file, "utf8") : "",
    )
    .join("\n");
}

const everyQuery = (): { where: string; query: string }[] => [
  ...docEntries,
  ...alertQueries.map((query) => ({ where: "infra/modules/alerts.bicep", query })),
  ...workbookQueries.map((query) => ({ where: "infra/modules/workbook.bicep", query })),
];

describe("the KQL of docs/how-to/operate.md, the alert rules and the workbook", () => {
  it("covers leader history, step outcomes, a job's progress, throughput and queues", () => {
    expect(docQueries.length).toBeGreaterThanOrEqual(6);
    expect(docQueries.some((query) => query.includes("lease-acquired") && query.includes("by epoch"))).toBe(true);
    expect(docQueries.some((query) => query.includes("step-aborted"))).toBe(true);
    expect(
      docQueries.some((query) => query.includes("mv-expand progress = parse_json(tostring(customDimensions.jobs))")),
    ).toBe(true);
    expect(docQueries.some((query) => query.includes("coordinator.items"))).toBe(true);
    expect(docQueries.some((query) => query.includes("coordinator.queue.depth"))).toBe(true);
  });

  describeCompiled("the alert rules and the workbook, as compiled", () => {
    it("six alert rules and eight panels, the thresholds substituted as deployed", () => {
      expect(alertQueries).toHaveLength(6);
      expect(workbookQueries).toHaveLength(8);
      // The stalled rule's window is the default, 10 minutes.
      expect(alertQueries.filter((query) => query.includes("let window = 10m;"))).toHaveLength(1);
      expect(alertQueries.join("\n")).not.toContain("__WINDOW__");
    });
  });

  it("each parses and binds against the customEvents, customMetrics and traces tables with no error", () => {
    for (const { where, query } of everyQuery()) expect(analyze(query), `${where}:\n${query}`).toEqual([]);
  });

  it("the language service does report a wrong column, an unknown function and a syntax error (the check can fail)", () => {
    expect(analyze("customEvents | where nmae == 'x'")).toEqual([expect.stringMatching(/nmae/)]);
    expect(analyze("customEvents | extend e = parse_jsn(tostring(customDimensions))")).toEqual([
      expect.stringMatching(/parse_jsn/),
    ]);
    expect(analyze("customMetrics | where | take 1")).not.toEqual([]);
  });

  it("they read attributes, never a substring of a log message", () => {
    for (const { where, query } of everyQuery()) {
      expect(query, where).not.toMatch(/\[coordinator-event\]|substring\(message|parse_json\(message/);
      expect(query, where).toMatch(/customDimensions|\bvalue(Sum|Count|Max)?\b/);
    }
  });

  it("they name only event types the app emits, attributes its records carry, job progress fields and its metrics", () => {
    const text = everyQuery()
      .map(({ query }) => query)
      .join("\n");
    const names = [...text.matchAll(/"([a-z]+-[a-z]+)"/g)].map((match) => match[1] ?? "");
    expect(names.length).toBeGreaterThan(0);
    // Besides event types, a query may name the poison queues' roles (coordinator.queue.depth's `queue` attribute).
    for (const name of names)
      expect([...Object.keys(EVERY_EVENT_TYPE), "work-poison", "results-poison"], name).toContain(name);
    const metrics = new Set([...text.matchAll(/"(coordinator\.[a-z.]+)"/g)].map((match) => match[1] ?? ""));
    expect(metrics.size).toBeGreaterThan(0);
    for (const metric of metrics) expect(Object.values(METRIC_NAMES), metric).toContain(metric);

    const source = sourceText();
    for (const field of new Set(
      [...text.matchAll(/\bcustomDimensions\.([A-Za-z]+)/g)].map((match) => match[1] ?? ""),
    )) {
      expect(new RegExp(`\\b${field}\\b`).test(source), `attribute ${field} is not in src/`).toBe(true);
    }
    const progressFields: Record<keyof JobProgress, true> = {
      id: true,
      total: true,
      dispatched: true,
      done: true,
      failed: true,
    };
    for (const field of new Set([...text.matchAll(/\bprogress\.([A-Za-z]+)/g)].map((match) => match[1] ?? ""))) {
      expect(Object.keys(progressFields), `progress.${field}`).toContain(field);
    }
  });
});
