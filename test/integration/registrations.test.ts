import { resolve } from "node:path";
import { InvocationContext } from "@azure/functions";
import { beforeAll, describe, expect, it } from "vitest";
import { loadFunctionApp, type FunctionApp } from "../../dev/src/local/registrations";
import { type CoordinatorApp } from "../../src/app/context";
import { createRepoApp } from "../../scripts/support/repoKinds";
import { parseEventLine, type AppEvent } from "../../src/app/events";
import { submitJob } from "../../src/app/operations";
import { useAzurite } from "../support/azuriteFixture";
import { testAppSettings } from "../support/inProcessApp";

/** The trigger binding of a captured registration. */
function trigger(app: FunctionApp, name: string): Record<string, unknown> {
  const fn = app.functions.find((f) => f.metadata.name === name);
  const binding = Object.values(fn?.metadata.bindings ?? {}).find(
    (b) => typeof b.type === "string" && b.type.endsWith("Trigger"),
  );
  if (binding === undefined) throw new Error(`no trigger binding for ${name}`);
  return binding;
}

describe("the app's real registrations (captured as the Functions worker does)", () => {
  const env = useAzurite();
  let app: FunctionApp;
  let built: CoordinatorApp | undefined;
  /** An app on the same storage names as the registered one (both read process.env). */
  const storage = (): CoordinatorApp => (built ??= createRepoApp(process.env));
  beforeAll(async () => {
    // A long step budget: the shutdown test below must find the step still running when the hook fires.
    Object.assign(process.env, testAppSettings(env.azurite.connectionString), {
      WEBSITE_INSTANCE_ID: "registrations-test",
      STEP_BUDGET_MS: "20000",
    });
    app = await loadFunctionApp(resolve(__dirname, "..", "..", "functions", "index.ts"));
  });

  it("registers exactly the documented functions with their triggers and settings; changing state needs the admin key", () => {
    expect(app.functions.map((f) => f.metadata.name).sort()).toEqual([
      "cancelJob",
      "coordinator",
      "getJob",
      "getLeader",
      "getStatus",
      "stepDown",
      "submitJob",
      "wake",
      "worker",
    ]);
    // Names and the schedule as the settings resolve them at registration (COORDINATOR_SCHEDULE's default here).
    expect(trigger(app, "coordinator")).toMatchObject({ type: "timerTrigger", schedule: "0 * * * * *" });
    expect(trigger(app, "worker")).toMatchObject({
      type: "queueTrigger",
      queueName: process.env.WORK_QUEUE,
      connection: "COORDINATION_STORAGE",
    });
    expect(trigger(app, "wake")).toMatchObject({
      type: "queueTrigger",
      queueName: process.env.WAKE_QUEUE,
      connection: "COORDINATION_STORAGE",
    });
    expect(trigger(app, "submitJob")).toMatchObject({
      type: "httpTrigger",
      route: "jobs",
      methods: ["POST"],
      authLevel: "function",
    });
    expect(trigger(app, "getJob")).toMatchObject({
      type: "httpTrigger",
      route: "jobs/{id}",
      methods: ["GET"],
      authLevel: "function",
    });
    // Cancelling any job and stepping the leader down take more than the function key that opens the status page.
    expect(trigger(app, "cancelJob")).toMatchObject({
      type: "httpTrigger",
      route: "jobs/{id}",
      methods: ["DELETE"],
      authLevel: "admin",
    });
    expect(trigger(app, "getLeader")).toMatchObject({
      type: "httpTrigger",
      route: "leader",
      methods: ["GET"],
      authLevel: "function",
    });
    expect(trigger(app, "stepDown")).toMatchObject({
      type: "httpTrigger",
      route: "leader/step-down",
      methods: ["POST"],
      authLevel: "admin",
    });
    expect(trigger(app, "getStatus")).toMatchObject({
      type: "httpTrigger",
      route: "status",
      methods: ["GET"],
      authLevel: "function",
    });
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
    const poison = await storage().workPoisonQueue.receive(32, 1);
    const rejected = poison.map(
      (m) => JSON.parse(m.text ?? "{}") as { rejected?: { reason?: string; messageId?: string } },
    );
    expect(rejected).toContainEqual(
      expect.objectContaining({
        rejected: expect.objectContaining({
          messageId: "msg-1",
          reason: expect.stringMatching(/jobId/) as unknown,
        }) as unknown,
      }),
    );
    expect(logs.some((line) => line.includes("rejected") && line.includes("msg-1"))).toBe(true);
  });

  it("the captured worker handler logs a unit whose items failed as a warning naming how many and why", async () => {
    const worker = app.functions.find((f) => f.metadata.name === "worker");
    const logs: { level: string; line: string }[] = [];
    const context = new InvocationContext({
      functionName: "worker",
      invocationId: "inv-2",
      triggerMetadata: { dequeueCount: 1, id: "msg-2" },
      logHandler: (level, ...args) => logs.push({ level, line: args.map(String).join(" ") }),
    });
    const params = { format: "csv", keyField: "region", valueField: "amount" };
    const input = { inline: "region,amount\nnorth,abc\n" };
    await worker?.callback({ v: 1, jobId: "unit-failed-log", item: 0, kind: "group-by", params, input }, context);
    const warning = logs.find((log) => log.level === "warning" && log.line.includes("msg-2"));
    expect(warning?.line).toMatch(/^Work message msg-2: 1 of 1 items failed: .*abc/);
  });

  // Last: it fires the process-wide shutdown.
  it("the captured appTerminate hook ends a running tick with reason shutdown, waits for the release, and later ticks are skipped", async () => {
    expect(app.hooks.map((hook) => hook.name)).toEqual(["appTerminate"]);
    const coordinator = app.functions.find((f) => f.metadata.name === "coordinator");
    const events: AppEvent[] = [];
    const context = (id: string): InvocationContext =>
      new InvocationContext({
        functionName: "coordinator",
        invocationId: id,
        logHandler: (_level, ...args) => {
          const event = parseEventLine(args.map(String).join(" "));
          if (event !== undefined) events.push(event);
        },
      });
    const timer = {
      isPastDue: false,
      schedule: { adjustForDST: true },
      scheduleStatus: { last: "", next: "", lastUpdated: "" },
    };
    // A job nobody works on keeps the leader's step polling for its whole budget.
    const submitted = await submitJob(storage(), {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items: [{ inline: "region,amount\neu,1" }],
    });
    expect(submitted.ok).toBe(true);
    let tickSettled = false;
    const tick = Promise.resolve(coordinator?.callback(timer, context("tick-1"))).finally(() => {
      tickSettled = true;
    });
    await waitUntil(() => events.some((event) => event.type === "job-registered"));
    const epoch = events.find((event) => event.type === "step-started")?.epoch;

    const startedMs = Date.now();
    await app.hooks[0]?.callback({ hookData: {}, appHookData: {} });
    const hookMs = Date.now() - startedMs;
    // The hook returned only after the tick had ended and the lease was given back.
    expect(tickSettled).toBe(true);
    await tick;
    expect(events.find((event) => event.type === "lease-lost")).toMatchObject({ epoch, reason: "shutdown" });
    expect(events.find((event) => event.type === "step-aborted")).toMatchObject({ epoch, reason: "shutdown" });
    expect(events.some((event) => event.type === "lease-released" && event.epoch === epoch)).toBe(true);
    expect(hookMs).toBeLessThan(5_000);
    expect((await storage().leaseStore.read()).state).toBe("available");

    const before = events.length;
    await coordinator?.callback(timer, context("tick-2"));
    expect(events.slice(before).map((event) => [event.type, "reason" in event ? event.reason : undefined])).toEqual([
      ["step-skipped", "shutdown"],
    ]);
  });
});

async function waitUntil(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms.`);
    await new Promise((done) => setTimeout(done, 20));
  }
}
