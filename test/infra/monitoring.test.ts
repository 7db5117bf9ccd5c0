import { expect, it } from "vitest";
import { describeCompiled, ofType, only, readSnapshot, useCompiledInfra, workbookContent } from "./compiled";

/**
 * The alert rules, the optional action group and the workbook (infra/modules/alerts.bicep, workbook.bicep), as the
 * compiler evaluates main.bicep with main.bicepparam and with the variant (an alert address, tuned thresholds). Their
 * queries are checked by kql.test.ts; here, what each rule is and when it notifies whom.
 */

const RULE = "Microsoft.Insights/scheduledQueryRules";

describeCompiled("alert rules", () => {
  const infra = useCompiledInfra();

  it("six log search rules on the Application Insights component: poison, stalled, flapping, a job past its deadline, retention that cannot remove a job, a kind holding the event loop", () => {
    const main = readSnapshot(infra(), "main");
    const component = only(main, "Microsoft.Insights/components");
    const rules = ofType(main, RULE);
    expect(rules.map((rule) => rule.name.replace(`alert-${component.name}-`, ""))).toEqual([
      "poison",
      "stalled",
      "flapping",
      "job-expired",
      "job-removal-failed",
      "item-held-event-loop",
    ]);
    for (const rule of rules) {
      expect(rule.kind).toBe("LogAlert");
      expect(rule.properties?.scopes).toEqual([component.id]);
      expect([1, 2]).toContain(rule.properties?.severity);
    }
    expect(main.outputs.alertRuleNames).toEqual(rules.map((rule) => rule.name));
  });

  it("the thresholds are parameters: N minutes without a completed step, K leader changes an hour", () => {
    const criterion = (snapshot: "main" | "variant", suffix: string) =>
      (
        ofType(readSnapshot(infra(), snapshot), RULE).find((rule) => rule.name.endsWith(`-${suffix}`))?.properties
          ?.criteria as { allOf: Record<string, unknown>[] } | undefined
      )?.allOf[0];
    const flapping = ofType(readSnapshot(infra(), "main"), RULE).find((rule) => rule.name.endsWith("-flapping"));
    expect(flapping?.properties?.windowSize).toBe("PT1H");
    expect(criterion("main", "flapping")).toMatchObject({ threshold: 60, metricMeasureColumn: "changes" });
    expect(criterion("main", "stalled")?.query).toContain("let window = 10m;");
    expect(criterion("variant", "flapping")).toMatchObject({ threshold: 200 });
    expect(criterion("variant", "stalled")?.query).toContain("let window = 30m;");
  });

  it("an action group e-mails them only when alertEmail is set; without one the rules notify nobody", () => {
    const main = readSnapshot(infra(), "main");
    expect(ofType(main, "Microsoft.Insights/actionGroups")).toEqual([]);
    for (const rule of ofType(main, RULE)) expect(rule.properties?.actions).toEqual({ actionGroups: [] });
    const variant = readSnapshot(infra(), "variant");
    const group = only(variant, "Microsoft.Insights/actionGroups");
    expect(group.properties).toMatchObject({
      enabled: true,
      emailReceivers: [{ emailAddress: "ops@example.com", useCommonAlertSchema: true }],
    });
    for (const rule of ofType(variant, RULE)) expect(rule.properties?.actions).toEqual({ actionGroups: [group.id] });
  });
});

describeCompiled("workbook", () => {
  const infra = useCompiledInfra();

  it("a shared workbook on the component: leader timeline, terms, jobs, throughput, steps, queue depths, fold lag, trouble", () => {
    const main = readSnapshot(infra(), "main");
    const workbook = only(main, "Microsoft.Insights/workbooks");
    expect(workbook.kind).toBe("shared");
    expect(workbook.properties?.sourceId).toBe(only(main, "Microsoft.Insights/components").id);
    const { content } = workbookContent(main);
    const titles = (content as { items: { content: { title?: string } }[] }).items
      .map((item) => item.content.title)
      .filter((title) => title !== undefined);
    expect(titles).toEqual([
      "Leader timeline: one row per term",
      "Terms begun per instance",
      "Jobs",
      "Throughput: items per kind and outcome",
      "Coordination steps",
      "Queue depths",
      "Fold lag (seconds)",
      "Trouble: jobs retention cannot remove, kinds holding the event loop",
    ]);
  });
});
