import { readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import type { JobProgress } from "../../src/coordination/step";
import { EVERY_EVENT_TYPE } from "../support/eventTypes";
import { REPO_ROOT } from "./bicep";

/**
 * The KQL queries in docs/OPERATIONS.md (leader history, step outcomes, a job's progress) parse and bind against the
 * schema of Application Insights' `traces` table, checked with Kusto's own language service (Kusto.Language, the
 * parser and binder of Azure Data Explorer, compiled to JavaScript), and only name event types and fields the app
 * emits.
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

/** Columns of Application Insights' `traces` table (classic schema, as the Logs blade of the component shows it). */
const TRACES_SCHEMA =
  "(timestamp:datetime, message:string, severityLevel:int, itemType:string, customDimensions:dynamic, customMeasurements:dynamic, " +
  "operation_Name:string, operation_Id:string, operation_ParentId:string, cloud_RoleName:string, cloud_RoleInstance:string, " +
  "appId:string, appName:string, iKey:string, sdkVersion:string, itemId:string, itemCount:int)";

const readme = readFileSync(path.join(REPO_ROOT, "docs", "OPERATIONS.md"), "utf8");
const queries = [...readme.matchAll(/^```kusto\n([\s\S]*?)^```/gm)].map((match) => match[1] ?? "");

let analyze: (query: string) => string[];

beforeAll(() => {
  const load = createRequire(__filename);
  load("@kusto/language-service-next/bridge.min.js");
  load("@kusto/language-service-next/Kusto.Language.Bridge.min.js");
  const kusto = (globalThis as unknown as { Kusto: { Language: KustoLanguage } }).Kusto.Language;
  const database = new kusto.Symbols.DatabaseSymbol.ctor("appinsights", [
    new kusto.Symbols.TableSymbol.$ctor7("traces", TRACES_SCHEMA, null),
  ]);
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
}, 60_000);

/** The text of every TypeScript file under src/. */
function sourceText(dir = path.join(REPO_ROOT, "src")): string {
  return readdirSync(dir)
    .map((name) => path.join(dir, name))
    .map((file) =>
      statSync(file).isDirectory() ? sourceText(file) : file.endsWith(".ts") ? readFileSync(file, "utf8") : "",
    )
    .join("\n");
}

describe("the KQL queries of docs/OPERATIONS.md", () => {
  it("cover leader history, step outcomes and a job's progress", () => {
    expect(queries.length).toBeGreaterThanOrEqual(4);
    expect(queries.some((query) => query.includes("lease-acquired") && query.includes("by epoch"))).toBe(true);
    expect(queries.some((query) => query.includes("step-aborted"))).toBe(true);
    expect(queries.some((query) => query.includes("mv-expand progress = e.jobs"))).toBe(true);
  });

  it("each parses and binds against the traces table with no error", () => {
    for (const query of queries) expect(analyze(query), query).toEqual([]);
  });

  it("the language service does report a wrong column, an unknown function and a syntax error (the check can fail)", () => {
    expect(analyze("traces | where mesage startswith 'x'")).toEqual([expect.stringMatching(/mesage/)]);
    expect(analyze("traces | extend e = parse_jsn(message)")).toEqual([expect.stringMatching(/parse_jsn/)]);
    expect(analyze("traces | where | take 1")).not.toEqual([]);
  });

  it("name only event types the app emits, and fields its events or job progress carry", () => {
    const text = queries.join("\n");
    const eventTypes = [...text.matchAll(/"([a-z]+-[a-z]+)"/g)].map((match) => match[1] ?? "");
    expect(eventTypes.length).toBeGreaterThan(0);
    for (const type of eventTypes) expect(Object.keys(EVERY_EVENT_TYPE), type).toContain(type);

    const source = sourceText();
    for (const field of new Set([...text.matchAll(/\be\.([A-Za-z]+)/g)].map((match) => match[1] ?? ""))) {
      expect(new RegExp(`\\b${field}\\b`).test(source), `event field ${field} is not in src/`).toBe(true);
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
