import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FunctionsHost } from "../../dev/src/local/host";
import { loadFunctionApp, type FunctionApp } from "../../dev/src/local/registrations";
import { parseEventLine, type AppEvent } from "../../src/app/events";
import { useAzurite } from "../support/azuriteFixture";
import { testAppSettings } from "../support/inProcessApp";

/**
 * The real app on the local host (captured registrations, host.json's queue settings) on Azurite, with the
 * coordinator's timer DISABLED: a job submitted over HTTP can only move if the submission's wake-up message reaches
 * the `wake` function and that runs the step.
 */
describe("wake-up on Azurite: submit → dispatched without any timer tick", () => {
  const storage = useAzurite();
  const events: AppEvent[] = [];
  const functionsRun = new Set<string>();
  let app: FunctionApp;
  let host: FunctionsHost;

  beforeAll(async () => {
    // The app's handlers read process.env (getCoordinatorApp); the host reads the same for %SETTING% references.
    Object.assign(process.env, testAppSettings(storage.azurite.connectionString), {
      WEBSITE_INSTANCE_ID: "wake-test",
      STEP_BUDGET_MS: "10000",
      COORDINATOR_SCHEDULE: "0 0 0 1 1 *",
      "AzureWebJobs.coordinator.Disabled": "true",
    });
    app = await loadFunctionApp(resolve(__dirname, "..", "..", "functions", "index.ts"));
    host = new FunctionsHost({
      app,
      log: (entry) => {
        const event = parseEventLine(entry.message);
        if (event !== undefined) events.push(event);
        if (entry.functionName !== undefined) functionsRun.add(entry.functionName);
      },
      hostJsonPath: resolve(__dirname, "..", "..", "host.json"),
      queueOverrides: { maxPollingIntervalMs: 500 },
      messageLeaseMs: 30_000,
    });
    await host.start();
  });

  afterAll(async () => {
    await host.stop();
  });

  it("a job submitted over HTTP is dispatched and completed by steps the wake function ran; the timer never ran", async () => {
    const base = `http://127.0.0.1:${String(host.httpPort)}/api`;
    const items = Array.from({ length: 5 }, (_, i) => ({ inline: `region,amount\neu,${i}` }));
    const response = await fetch(`${base}/jobs`, {
      method: "POST",
      body: JSON.stringify({
        kind: "group-by",
        params: { format: "csv", keyField: "region", valueField: "amount" },
        items,
      }),
    });
    expect(response.status).toBe(202);
    const { id } = (await response.json()) as { id: string };

    let status: { status?: string; progress?: { dispatched: number; done: number } } = {};
    const deadline = Date.now() + 30_000;
    while (status.status !== "completed" && Date.now() < deadline) {
      await new Promise((done) => setTimeout(done, 200));
      status = (await (await fetch(`${base}/jobs/${id}`)).json()) as typeof status;
    }
    expect(status).toMatchObject({ status: "completed", progress: { dispatched: 5, done: 5 } });
    expect(events.find((event) => event.type === "job-registered" && event.jobId === id)).toBeDefined();
    const started = events.filter((event) => event.type === "step-started");
    expect(started.length).toBeGreaterThan(0);
    expect(started.every((event) => event.trigger === "wake")).toBe(true);
    expect(functionsRun.has("wake")).toBe(true);
    expect(functionsRun.has("coordinator")).toBe(false);
  });
});
