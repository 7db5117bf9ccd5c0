import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  type BicepFile,
  INFRA_DIR,
  moduleDeclarations,
  parseBicepFile,
  resourceDeclarations,
  stringLiteral,
  valueAt,
  variableDeclarations,
} from "./bicep";
import { type BicepValue, evaluate, templateScope } from "./evaluate";

/**
 * The alert rules, the optional action group and the workbook (infra/modules/alerts.bicep, workbook.bicep) are
 * deployed by main.bicep on the one Application Insights component every app sends to. Their queries are checked by
 * kql.test.ts; here, what each rule is and when it notifies whom.
 */

let main: BicepFile;
let alerts: BicepFile;
let workbook: BicepFile;

beforeAll(async () => {
  const parse = (file: string) => parseBicepFile(path.join(INFRA_DIR, file));
  main = await parse("main.bicep");
  alerts = await parse("modules/alerts.bicep");
  workbook = await parse("modules/workbook.bicep");
});

const scopeOf = templateScope;

const resource = (file: BicepFile, type: string) =>
  resourceDeclarations(file).find((candidate) => candidate.type === type && !candidate.existing);

describe("alert rules", () => {
  it("four log search rules on the Application Insights component: poison, stalled, flapping, a job past its deadline", () => {
    const rules = scopeOf(alerts).get("rules") as { name: string; threshold: number; severity: number }[];
    expect(rules.map((rule) => rule.name)).toEqual(["poison", "stalled", "flapping", "job-expired"]);
    const rule = resource(alerts, "Microsoft.Insights/scheduledQueryRules");
    expect(stringLiteral(valueAt(rule?.body, "kind"))).toBe("LogAlert");
    expect(valueAt(rule?.body, "properties", "scopes")?.text).toContain("applicationInsights.id");
    expect(rule?.node.text).toContain("for rule in rules");
    for (const severity of rules.map((candidate) => candidate.severity)) expect([1, 2]).toContain(severity);
  });

  it("the thresholds are parameters: N minutes without a completed step, K leader changes an hour", () => {
    const defaults = scopeOf(alerts).get("rules") as {
      name: string;
      query: string;
      threshold: number;
      metricMeasureColumn: string;
      windowSize: string;
    }[];
    const flapping = defaults.find((rule) => rule.name === "flapping");
    expect(flapping).toMatchObject({ threshold: 60, metricMeasureColumn: "changes", windowSize: "PT1H" });
    const tuned = scopeOf(alerts, { noStepMinutes: 30, leaderChangesPerHour: 200 }).get("rules") as typeof defaults;
    expect(tuned.find((rule) => rule.name === "stalled")?.query).toContain("let window = 30m;");
    expect(tuned.find((rule) => rule.name === "flapping")?.threshold).toBe(200);
    // main.bicep's parameters reach the module, with the same defaults.
    const passed = valueAt(moduleDeclarations(main).find((m) => m.path === "modules/alerts.bicep")?.body, "params");
    expect(valueAt(passed, "alertEmail")?.text).toBe("alertEmail");
    expect(valueAt(passed, "noStepMinutes")?.text).toBe("noStepAlertMinutes");
    expect(valueAt(passed, "leaderChangesPerHour")?.text).toBe("leaderChangesPerHourAlert");
    const mainScope = scopeOf(main);
    expect([mainScope.get("noStepAlertMinutes"), mainScope.get("leaderChangesPerHourAlert")]).toEqual([10, 60]);
    expect(mainScope.get("alertEmail")).toBe("");
  });

  it("an action group e-mails them only when alertEmail is set; without one the rules notify nobody", () => {
    const group = resource(alerts, "Microsoft.Insights/actionGroups");
    expect(group?.node.text).toContain("= if (!empty(alertEmail))");
    const receivers = valueAt(group?.body, "properties", "emailReceivers");
    expect(receivers?.text).toContain("emailAddress: alertEmail");
    const actionGroups = variableDeclarations(alerts).get("actionGroups");
    if (actionGroups === undefined) throw new Error("alerts.bicep has no actionGroups variable");
    const bound = (email: string) =>
      evaluate(
        actionGroups,
        new Map<string, BicepValue>([
          ["alertEmail", email],
          ["actionGroup", { id: "ag-id" }],
        ]),
      );
    expect(bound("")).toEqual([]);
    expect(bound("ops@example.com")).toEqual(["ag-id"]);
    expect(
      valueAt(resource(alerts, "Microsoft.Insights/scheduledQueryRules")?.body, "properties", "actions")?.text,
    ).toContain("actionGroups: actionGroups");
  });
});

describe("workbook", () => {
  it("a shared workbook on the component: leader timeline, terms, jobs, throughput, steps, queue depths, fold lag", () => {
    const deployed = resource(workbook, "Microsoft.Insights/workbooks");
    expect(stringLiteral(valueAt(deployed?.body, "kind"))).toBe("shared");
    expect(valueAt(deployed?.body, "properties", "sourceId")?.text).toBe("applicationInsights.id");
    expect(valueAt(deployed?.body, "properties", "serializedData")?.text).toBe("string(content)");
    const panels = scopeOf(workbook).get("panels") as { title: string; visualization: string }[];
    expect(panels.map((panel) => panel.title)).toEqual([
      "Leader timeline: one row per term",
      "Terms begun per instance",
      "Jobs",
      "Throughput: items per kind and outcome",
      "Coordination steps",
      "Queue depths",
      "Fold lag (seconds)",
    ]);
    expect(moduleDeclarations(main).some((m) => m.path === "modules/workbook.bicep")).toBe(true);
  });
});
