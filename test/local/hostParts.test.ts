import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseTimeSpanMs } from "../../src/app/timeSpan";
import { resolveAppSettings } from "../../dev/src/local/bindings";
import { readHostConfig } from "../../dev/src/local/hostConfig";
import { hostIdFrom } from "../../dev/src/local/listenerLock";
import { PollingBackoff } from "../../dev/src/local/pollingBackoff";
import { decodeMessageText } from "../../dev/src/local/queueMessages";
import { encodeBody } from "../../src/azure/StorageQueue";
import { compileRoute } from "../../dev/src/local/routes";
import { parseSchedule } from "../../dev/src/local/timerTrigger";

describe("timer schedules", () => {
  it("reads NCRONTAB with seconds first", () => {
    const schedule = parseSchedule("*/5 * * * * *", "f");
    expect(schedule.next(new Date("2024-05-01T12:00:02.500Z")).toISOString()).toBe("2024-05-01T12:00:05.000Z");
    // Strictly after: computing the next occurrence right at one must not fire it twice.
    expect(schedule.next(new Date("2024-05-01T12:00:05.000Z")).toISOString()).toBe("2024-05-01T12:00:10.000Z");
    expect(parseSchedule("0 30 9 * * 1-5", "f").next(new Date("2024-05-03T10:00:00Z")).toISOString()).toBe(
      "2024-05-06T09:30:00.000Z",
    );
  });

  it("reads a TimeSpan as a fixed interval", () => {
    expect(parseSchedule("00:00:30", "f").next(new Date("2024-05-01T12:00:00Z")).toISOString()).toBe(
      "2024-05-01T12:00:30.000Z",
    );
  });

  it("rejects anything else, naming the function", () => {
    expect(() => parseSchedule("*/5 * * *", "coordinator")).toThrow(
      /Function "coordinator": schedule "\*\/5 \* \* \*" must be NCRONTAB with six fields/,
    );
    expect(() => parseSchedule("99 * * * * *", "coordinator")).toThrow(/not a valid NCRONTAB expression/);
  });
});

describe("binding settings", () => {
  it("resolves %AppSetting% references and names a missing one", () => {
    expect(resolveAppSettings("%A%-%B%", { A: "x", B: "y" }, "here")).toBe("x-y");
    expect(() => resolveAppSettings("%WORK_QUEUE%", {}, 'Function "worker" property "queueName"')).toThrow(
      'Function "worker" property "queueName" refers to app setting %WORK_QUEUE%, which is not set.',
    );
  });

  it("parses .NET TimeSpans", () => {
    expect(parseTimeSpanMs("00:00:02")).toBe(2000);
    expect(parseTimeSpanMs("1.00:01:00.5")).toBe(86_460_500);
    expect(parseTimeSpanMs("2s")).toBeUndefined();
  });
});

describe("host.json queue settings", () => {
  const write = (json: unknown): string => {
    const path = join(mkdtempSync(join(tmpdir(), "hostjson-")), "host.json");
    writeFileSync(path, JSON.stringify(json));
    return path;
  };

  it("defaults like the queues extension when host.json says nothing", () => {
    expect(readHostConfig(undefined, {}, {}, { processorCount: 1 })).toEqual({
      queues: {
        batchSize: 16,
        newBatchThreshold: 8,
        maxDequeueCount: 5,
        visibilityTimeoutMs: 0,
        maxPollingIntervalMs: 60_000,
        messageEncoding: "base64",
      },
      httpRoutePrefix: "api",
      singleton: { listenerLockPeriodMs: 60_000, listenerLockRecoveryPollingIntervalMs: 60_000 },
    });
  });

  it("defaults newBatchThreshold as the queues extension does: batchSize / 2 × the processor count unless WEBSITE_SKU is Dynamic", () => {
    const path = write({ extensions: { queues: { batchSize: 4 } } });
    expect(readHostConfig(undefined, {}, {}, { processorCount: 4 }).queues.newBatchThreshold).toBe(32);
    expect(readHostConfig(path, {}, {}, { processorCount: 2 }).queues.newBatchThreshold).toBe(4);
    expect(readHostConfig(path, {}, {}, { processorCount: 2, websiteSku: "Dynamic" }).queues.newBatchThreshold).toBe(2);
    // Flex Consumption's SKU is not Dynamic.
    expect(
      readHostConfig(path, {}, {}, { processorCount: 2, websiteSku: "FlexConsumption" }).queues.newBatchThreshold,
    ).toBe(4);
    const set = write({ extensions: { queues: { batchSize: 4, newBatchThreshold: 1 } } });
    expect(readHostConfig(set, {}, {}, { processorCount: 8 }).queues.newBatchThreshold).toBe(1);
  });

  it("refuses a host.json recovery polling interval under 15 s, as the host's SingletonOptions do; the local overrides may be shorter", () => {
    expect(() => readHostConfig(write({ singleton: { listenerLockRecoveryPollingInterval: "00:00:05" } }))).toThrow(
      "host.json singleton.listenerLockRecoveryPollingInterval must be at least 15 seconds (the Functions host refuses to start with less), got 5 s.",
    );
    expect(readHostConfig(write({}), {}, { listenerLockRecoveryPollingIntervalMs: 500 }).singleton).toEqual({
      listenerLockPeriodMs: 60_000,
      listenerLockRecoveryPollingIntervalMs: 500,
    });
  });

  it("reads the timer listener lock's periods from host.json singleton; overrides win; a period outside 15–60 s is refused", () => {
    const path = write({
      singleton: { listenerLockPeriod: "00:00:30", listenerLockRecoveryPollingInterval: "00:00:20" },
    });
    expect(readHostConfig(path).singleton).toEqual({
      listenerLockPeriodMs: 30_000,
      listenerLockRecoveryPollingIntervalMs: 20_000,
    });
    expect(readHostConfig(path, {}, { listenerLockRecoveryPollingIntervalMs: 500 }).singleton).toEqual({
      listenerLockPeriodMs: 30_000,
      listenerLockRecoveryPollingIntervalMs: 500,
    });
    expect(() => readHostConfig(write({ singleton: { listenerLockPeriod: "00:02:00" } }))).toThrow(
      "singleton.listenerLockPeriod must be from 15 to 60 seconds (a blob lease's limits), got 120 s.",
    );
    expect(() => readHostConfig(write({ singleton: { listenerLockRecoveryPollingInterval: "soon" } }))).toThrow(
      /host.json singleton.listenerLockRecoveryPollingInterval must be a TimeSpan/,
    );
  });

  it("names the app's listener lock by host id: AzureFunctionsWebHost__hostid, else WEBSITE_SITE_NAME as the host shortens it", () => {
    expect(hostIdFrom({})).toBe("local-app");
    expect(hostIdFrom({ WEBSITE_SITE_NAME: "Coordinator-WestEurope" })).toBe("coordinator-westeurope");
    expect(hostIdFrom({ WEBSITE_SITE_NAME: "a-very-long-function-app-name-with-many-parts-x" })).toBe(
      "a-very-long-function-app-name-wi",
    );
    expect(hostIdFrom({ WEBSITE_SITE_NAME: "app", AzureFunctionsWebHost__hostid: "Shared-Id" })).toBe("shared-id");
  });

  it("reads extensions.queues and extensions.http.routePrefix", () => {
    const config = readHostConfig(
      write({
        extensions: {
          queues: {
            batchSize: 4,
            visibilityTimeout: "00:00:05",
            maxPollingInterval: "00:00:02",
            messageEncoding: "none",
          },
          http: { routePrefix: "/v1/" },
        },
      }),
      {},
      {},
      { processorCount: 1 },
    );
    expect(config.queues).toMatchObject({
      batchSize: 4,
      newBatchThreshold: 2,
      visibilityTimeoutMs: 5000,
      maxPollingIntervalMs: 2000,
      messageEncoding: "none",
    });
    expect(config.httpRoutePrefix).toBe("v1");
  });

  it("rejects a bad value, naming the setting and what is allowed", () => {
    expect(() => readHostConfig(write({ extensions: { queues: { batchSize: 64 } } }))).toThrow(
      "host.json extensions.queues.batchSize must be a whole number from 1 to 32, got 64.",
    );
    expect(() => readHostConfig(write({ extensions: { queues: { messageEncoding: "utf8" } } }))).toThrow(
      /messageEncoding must be "base64" or "none"/,
    );
  });
});

describe("queue polling back-off", () => {
  it("waits as the queues extension does: 100 ms, then 100 ms + 2^(n−1) × 100 ms (±20 %), up to maxPollingInterval", () => {
    const middle = new PollingBackoff(2000, () => 0.5);
    const waits = Array.from({ length: 9 }, () => middle.next(false));
    expect(waits).toEqual([100, 200, 300, 500, 900, 1700, 2000, 2000, 2000]);
    // A receive that found messages starts over, one step up.
    expect(middle.next(true)).toBe(100);
    expect(middle.next(false)).toBe(200);
    // The randomisation is ±20 % of the increment.
    const high = new PollingBackoff(60_000, () => 1);
    expect([high.next(false), high.next(false), high.next(false)]).toEqual([100, 220, 340]);
    const low = new PollingBackoff(60_000, () => 0);
    expect([low.next(false), low.next(false), low.next(false)]).toEqual([100, 180, 260]);
  });
});

describe("queue message encoding", () => {
  it("decodes strict base64, ignoring whitespace as .NET does", () => {
    expect(decodeMessageText(encodeBody('{"a":"é"}', "base64"), "base64")).toEqual({ ok: true, text: '{"a":"é"}' });
    expect(decodeMessageText("eyJh\nIjoxfQ==", "base64")).toEqual({ ok: true, text: '{"a":1}' });
  });

  it("refuses text that is not base64 instead of decoding garbage", () => {
    for (const text of ['{"a":1}', "abc", "ab=c", "a b"]) expect(decodeMessageText(text, "base64").ok).toBe(false);
  });

  it("refuses bytes that are not UTF-8 as a binding failure, as the host's strict string conversion does, not as undecodable", () => {
    expect(decodeMessageText(Buffer.from([0x61, 0xff]).toString("base64"), "base64")).toEqual({
      ok: false,
      failure: "binding",
      reason: "The message body is not valid UTF-8, so it cannot be bound to a string.",
    });
    expect(decodeMessageText("{not base64}", "base64")).toMatchObject({ ok: false, failure: "decoding" });
  });

  it("passes text through with messageEncoding none", () => {
    expect(decodeMessageText("{not base64}", "none")).toEqual({ ok: true, text: "{not base64}" });
  });
});

describe("HTTP routes", () => {
  it("matches /<prefix>/<route> case-insensitively with params, optional and catch-all segments", () => {
    const route = compileRoute("api", "jobs/{id}/{detail?}", "getJob");
    expect(route.match("/api/jobs/42")).toEqual({ id: "42" });
    expect(route.match("/API/Jobs/a%20b/full/")).toEqual({ id: "a b", detail: "full" });
    expect(route.match("/api/jobs")).toBeUndefined();
    expect(compileRoute("api", "files/{*path}", "f").match("/api/files/a/b/c.txt")).toEqual({ path: "a/b/c.txt" });
  });

  it("checks the int constraint and mixed segments", () => {
    const route = compileRoute("", "items/{n:int}/report.{format}", "f");
    expect(route.match("/items/7/report.csv")).toEqual({ n: "7", format: "csv" });
    expect(route.match("/items/x/report.csv")).toBeUndefined();
  });
});
