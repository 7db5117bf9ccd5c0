import { resolve } from "node:path";
import { QueueServiceClient } from "@azure/storage-queue";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FunctionsHost } from "../../dev/src/local/host";
import type { HostLogEntry } from "../../dev/src/local/invoke";
import { loadFunctionApp, type FunctionApp } from "../../dev/src/local/registrations";
import { uniqueName, useAzurite } from "../support/azuriteFixture";

/** What a fixture handler logged: `fixture <json>`. */
interface FixtureRecord {
  function: string;
  [field: string]: unknown;
}

const FIXTURE = resolve(__dirname, "fixtures", "functions.ts");

describe("local Functions host on Azurite", () => {
  const storage = useAzurite();
  const logs: HostLogEntry[] = [];
  const names = { queue: uniqueName("in"), out: uniqueName("out"), failing: uniqueName("fail") };
  let app: FunctionApp;
  let host: FunctionsHost;
  let queues: QueueServiceClient;

  const records = (functionName: string): FixtureRecord[] =>
    logs
      .filter((entry) => entry.category === "user" && entry.message.startsWith("fixture "))
      .map((entry) => JSON.parse(entry.message.slice("fixture ".length)) as FixtureRecord)
      .filter((record) => record.function === functionName);

  beforeAll(async () => {
    app = await loadFunctionApp(FIXTURE);
    queues = QueueServiceClient.fromConnectionString(storage.azurite.connectionString);
    for (const name of Object.values(names)) await queues.getQueueClient(name).create();
    host = new FunctionsHost({
      app,
      log: (entry) => logs.push(entry),
      env: {
        FIXTURE_STORAGE: storage.azurite.connectionString,
        FIXTURE_QUEUE: names.queue,
        FIXTURE_OUT_QUEUE: names.out,
        FIXTURE_FAILING_QUEUE: names.failing,
        FIXTURE_SCHEDULE: "*/1 * * * * *",
      },
      hostJsonPath: resolve(__dirname, "fixtures", "no-host.json"),
      queueOverrides: { maxDequeueCount: 3, maxPollingIntervalMs: 300 },
      messageLeaseMs: 30_000,
    });
    await host.start();
  });

  afterAll(async () => {
    await host.stop();
  });

  it("captures the real registrations with their binding metadata", () => {
    const byName = new Map(app.functions.map((fn) => [fn.metadata.name, Object.values(fn.metadata.bindings)]));
    expect([...byName.keys()].sort()).toEqual([
      "alwaysFails",
      "echo",
      "echoBody",
      "getItem",
      "slow",
      "tick",
      "untilTerminate",
    ]);
    expect(app.hooks.map((hook) => hook.name)).toEqual(["appStart", "appTerminate"]);
    expect(byName.get("tick")).toContainEqual(
      expect.objectContaining({ type: "timerTrigger", direction: "in", schedule: "%FIXTURE_SCHEDULE%" }),
    );
    expect(byName.get("echo")).toContainEqual(
      expect.objectContaining({ type: "queueTrigger", queueName: "%FIXTURE_QUEUE%", connection: "FIXTURE_STORAGE" }),
    );
    expect(byName.get("echo")).toContainEqual(expect.objectContaining({ type: "queue", direction: "out" }));
    expect(byName.get("getItem")).toContainEqual(
      expect.objectContaining({ type: "httpTrigger", route: "items/{id}/{detail?}", methods: ["GET"] }),
    );
  });

  it("base64-decodes and JSON-parses a queue message, passes the trigger metadata, deletes it and writes the output", async () => {
    const queue = queues.getQueueClient(names.queue);
    const sent = await queue.sendMessage(Buffer.from(JSON.stringify({ Region: "west", amount: 3 })).toString("base64"));
    await waitFor(() =>
      records("echo").some((record) => (record.triggerMetadata as { id?: string } | undefined)?.id === sent.messageId),
    );
    const record = records("echo").find(
      (candidate) => (candidate.triggerMetadata as { id: string }).id === sent.messageId,
    );
    expect(record?.payload).toEqual({ Region: "west", amount: 3 });
    expect(record?.triggerMetadata).toMatchObject({
      dequeueCount: 1,
      id: sent.messageId,
      popReceipt: expect.any(String) as unknown,
      insertionTime: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/) as unknown,
      expirationTime: expect.any(String) as unknown,
      nextVisibleTime: expect.any(String) as unknown,
      // The library camel-cases trigger metadata values too — the worker's behaviour, kept on purpose.
      queueTrigger: { region: "west", amount: 3 },
    });
    await waitFor(async () => (await queue.getProperties()).approximateMessagesCount === 0);
    const out = await waitForMessage(queues, names.out);
    expect(JSON.parse(Buffer.from(out, "base64").toString("utf8"))).toEqual({ echoed: { Region: "west", amount: 3 } });
  });

  it("retries a failing message with a growing dequeueCount, then moves it unchanged to <queue>-poison", async () => {
    const body = Buffer.from(JSON.stringify({ n: 1 })).toString("base64");
    await queues.getQueueClient(names.failing).sendMessage(body);
    const poisoned = await waitForMessage(queues, `${names.failing}-poison`);
    expect(poisoned).toBe(body);
    expect(records("alwaysFails").map((record) => record.dequeueCount)).toEqual([1, 2, 3]);
    // The listener sends the copy, then deletes the original: the queue empties a moment after the copy appears.
    await waitFor(
      async () => (await queues.getQueueClient(names.failing).getProperties()).approximateMessagesCount === 0,
    );
  });

  it("gives the poison copy the service's default time-to-live, 7 days, as the host does (it sends no TTL)", async () => {
    const body = Buffer.from(JSON.stringify({ n: 2 })).toString("base64");
    await queues.getQueueClient(names.failing).sendMessage(body);
    const poison = queues.getQueueClient(`${names.failing}-poison`);
    let copy: { expiresOn: Date; insertedOn: Date } | undefined;
    await waitFor(async () => {
      copy = (await poison.exists())
        ? (await poison.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.find((m) => m.messageText === body)
        : undefined;
      return copy !== undefined;
    });
    expect((copy?.expiresOn.getTime() ?? 0) - (copy?.insertedOn.getTime() ?? 0)).toBe(7 * 86_400_000);
  });

  it("fails binding for a body that is base64 but not UTF-8 on every delivery, never running the function, then poisons it", async () => {
    const before = records("echo").length;
    const body = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString("base64");
    await queues.getQueueClient(names.queue).sendMessage(body);
    const poison = queues.getQueueClient(`${names.queue}-poison`);
    await waitFor(async () =>
      (await poison.exists())
        ? (await poison.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.some((m) => m.messageText === body)
        : false,
    );
    expect(records("echo")).toHaveLength(before);
    // Three deliveries (maxDequeueCount 3 here), each an execution that failed binding.
    const failed = logs.filter(
      (entry) =>
        entry.functionName === "echo" &&
        entry.message.startsWith("Executed 'Functions.echo' (Failed") &&
        entry.message.includes("not valid UTF-8"),
    );
    expect(failed).toHaveLength(3);
    await waitFor(
      async () => (await queues.getQueueClient(names.queue).getProperties()).approximateMessagesCount === 0,
    );
  });

  it("moves a message that is not valid base64 to the poison queue without invoking the function", async () => {
    const before = records("echo").length;
    await queues.getQueueClient(names.queue).sendMessage("{not base64}");
    const poison = queues.getQueueClient(`${names.queue}-poison`);
    await waitFor(async () =>
      (await poison.exists())
        ? (await poison.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.some(
            (message) => message.messageText === "{not base64}",
          )
        : false,
    );
    expect(records("echo")).toHaveLength(before);
  });

  it("fires the timer at each occurrence of its NCRONTAB schedule with the host's Timer object (no schedule monitor: the schedule fires more than once a minute)", async () => {
    await waitFor(() => records("tick").length >= 3, 6_000);
    const ticks = records("tick").map((tick) => ({ atMs: tick.atMs as number, timer: tick.timer }));
    for (const tick of ticks) {
      // As the WebJobs SDK measured (npm run conformance:host): no status without the monitor.
      expect(tick.timer).toEqual({ isPastDue: false, schedule: { adjustForDST: true }, scheduleStatus: null });
      // Each within half a second after a whole second (the schedule's occurrences).
      expect(tick.atMs % 1000).toBeLessThan(500);
    }
    const seconds = ticks.map((tick) => Math.floor(tick.atMs / 1000));
    expect(new Set(seconds).size).toBe(seconds.length);
  });

  it("routes HTTP requests to /api/<route> with route params, query, body and the response init", async () => {
    const base = `http://127.0.0.1:${String(host.httpPort)}`;
    const item = await fetch(`${base}/api/items/42/full?q=x`);
    expect(item.status).toBe(200);
    expect(item.headers.get("content-type")).toContain("application/json");
    expect(await item.json()).toEqual({ id: "42", detail: "full", q: "x" });
    expect(await (await fetch(`${base}/api/items/7`)).json()).toEqual({ id: "7", detail: null, q: null });
    const echoed = await fetch(`${base}/api/echo`, { method: "POST", body: "hello" });
    expect([echoed.status, echoed.headers.get("x-fixture"), await echoed.text()]).toEqual([201, "yes", "hello"]);
    expect((await fetch(`${base}/api/echo`)).status).toBe(404);
    expect((await fetch(`${base}/api/nothing`)).status).toBe(404);
  });

  // Last: it stops the shared host.
  it("stops gracefully: runs the appTerminate hooks while invocations are in flight, which finish and answer; no new timer ticks", async () => {
    const slow = fetch(`http://127.0.0.1:${String(host.httpPort)}/api/slow`);
    const untilTerminate = fetch(`http://127.0.0.1:${String(host.httpPort)}/api/until-terminate`);
    await waitFor(() =>
      ["slow", "untilTerminate"].every((name) =>
        logs.some((entry) => entry.functionName === name && entry.message.startsWith("Executing")),
      ),
    );
    const drained = await host.stop();
    const ticksAtStop = records("tick").length;
    expect(drained).toBe(true);
    expect(await (await slow).text()).toBe("done");
    // The hook saw the app-level hookData appStart wrote, and ran before the host stopped waiting for invocations.
    expect(await (await untilTerminate).text()).toBe('terminated; hookData.note was "set by appStart"');
    expect(
      logs.some(
        (entry) => entry.category === "host" && /^appTerminate hooks finished in \d+ ms\.$/.test(entry.message),
      ),
    ).toBe(true);
    await new Promise((done) => setTimeout(done, 1_500));
    expect(records("tick")).toHaveLength(ticksAtStop);
  });
});

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms.`);
    await new Promise((done) => setTimeout(done, 50));
  }
}

/** Waits for a message on `queueName` (created by the host if need be) and returns its raw text. */
async function waitForMessage(queues: QueueServiceClient, queueName: string): Promise<string> {
  const queue = queues.getQueueClient(queueName);
  let text: string | undefined;
  await waitFor(async () => {
    if (!(await queue.exists())) return false;
    text = (await queue.peekMessages()).peekedMessageItems[0]?.messageText;
    return text !== undefined;
  });
  return text ?? "";
}
