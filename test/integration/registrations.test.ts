import { resolve } from "node:path";
import { InvocationContext } from "@azure/functions";
import { beforeAll, describe, expect, it } from "vitest";
import { loadFunctionApp, type FunctionApp } from "../../scripts/local/registrations";
import { getCoordinatorApp } from "../../src/app/context";
import { useAzurite } from "../support/azuriteFixture";
import { testAppSettings } from "../support/inProcessApp";

/** The trigger binding of a captured registration. */
function trigger(app: FunctionApp, name: string): Record<string, unknown> {
  const fn = app.functions.find((f) => f.metadata.name === name);
  const binding = Object.values(fn?.metadata.bindings ?? {}).find((b) => typeof b.type === "string" && b.type.endsWith("Trigger"));
  if (binding === undefined) throw new Error(`no trigger binding for ${name}`);
  return binding;
}

describe("the app's real registrations (captured as the Functions worker does)", () => {
  const env = useAzurite();
  let app: FunctionApp;
  beforeAll(async () => {
    Object.assign(process.env, testAppSettings(env.azurite.connectionString), { WEBSITE_INSTANCE_ID: "registrations-test" });
    app = await loadFunctionApp(resolve(__dirname, "..", "..", "functions", "index.ts"));
  });

  it("registers exactly the documented functions with their triggers and settings", () => {
    expect(app.functions.map((f) => f.metadata.name).sort()).toEqual(["coordinator", "getJob", "getLeader", "stepDown", "submitJob", "worker"]);
    expect(trigger(app, "coordinator")).toMatchObject({ type: "timerTrigger", schedule: "%COORDINATOR_SCHEDULE%" });
    expect(trigger(app, "worker")).toMatchObject({ type: "queueTrigger", queueName: "%WORK_QUEUE%", connection: "COORDINATION_STORAGE" });
    expect(trigger(app, "submitJob")).toMatchObject({ type: "httpTrigger", route: "jobs", methods: ["POST"], authLevel: "function" });
    expect(trigger(app, "getJob")).toMatchObject({ type: "httpTrigger", route: "jobs/{id}", methods: ["GET"], authLevel: "function" });
    expect(trigger(app, "getLeader")).toMatchObject({ type: "httpTrigger", route: "leader", methods: ["GET"] });
    expect(trigger(app, "stepDown")).toMatchObject({ type: "httpTrigger", route: "leader/step-down", methods: ["POST"] });
  });

  it("the captured worker handler, called with an InvocationContext, sends a malformed message to poison with its reason", async () => {
    const worker = app.functions.find((f) => f.metadata.name === "worker");
    const logs: string[] = [];
    const context = new InvocationContext({
      functionName: "worker",
      invocationId: "inv-1",
      triggerMetadata: { dequeueCount: 1, id: "msg-1" },
      logHandler: (_level, ...args) => logs.push(args.map(String).join(" ")),
    });
    await worker?.callback({ v: 1, jobId: "NOT VALID", item: 0 }, context);
    const poison = await getCoordinatorApp().workPoisonQueue.receive(32, 1);
    const rejected = poison.map((m) => JSON.parse(m.text ?? "{}") as { rejected?: { reason?: string; messageId?: string } });
    expect(rejected).toContainEqual(expect.objectContaining({ rejected: expect.objectContaining({ messageId: "msg-1", reason: expect.stringMatching(/jobId/) as unknown }) as unknown }));
    expect(logs.some((line) => line.includes("rejected") && line.includes("msg-1"))).toBe(true);
  });
});
