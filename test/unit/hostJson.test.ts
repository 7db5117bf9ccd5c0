import { groupByKind } from "../../src/groupBy/groupBy";
import { registerCoordinator, type FunctionsApp } from "../../src/host/registerCoordinator";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { InvocationContext } from "@azure/functions";
import { describe, expect, it } from "vitest";
import { sinkFor } from "../../src/host/invocation";
import { parseEventLine, type AppEvent, type AppEventType } from "../../src/app/events";
import { EVERY_EVENT_TYPE } from "../support/eventTypes";
import { MAX_DEQUEUE_COUNT } from "../../src/app/context";
import { decodeBase64, decodeBody, encodeBody } from "../../src/azure/StorageQueue";

interface HostJson {
  extensions: { queues: { maxDequeueCount: number; messageEncoding: string; batchSize: number } };
}
const host = JSON.parse(readFileSync(join(__dirname, "..", "..", "host.json"), "utf8")) as HostJson;

describe("host.json agrees with the code", () => {
  it("maxDequeueCount is the one the worker uses to spot a last delivery", () => {
    expect(host.extensions.queues.maxDequeueCount).toBe(MAX_DEQUEUE_COUNT);
  });

  it("messageEncoding is base64, which the app's producers use", () => {
    expect(host.extensions.queues.messageEncoding).toBe("base64");
    expect(decodeBody(encodeBody('{"v":1,"é":"ü"}', "base64"), "base64")).toBe('{"v":1,"é":"ü"}');
  });

  it.each([
    ["plain text", "{not base64}"],
    ["base64 with a bad length", "abc"],
    ["base64 of invalid UTF-8", Buffer.from([0xff, 0xfe, 0xfd]).toString("base64")],
  ])("decoding rejects %s (it goes to poison like a host binding error)", (_name, body) => {
    expect(decodeBody(body, "base64")).toBeUndefined();
  });
});

describe("the queue body codec (the adapter's and the local host's)", () => {
  it.each([
    ["no padding", "YWJj", "abc"],
    ["one '='", "YWI=", "ab"],
    ["two '='", "YQ==", "a"],
    ["the empty string", "", ""],
  ])("decodeBase64 reads strict base64 with %s", (_name, text, bytes) => {
    expect(decodeBase64(text)?.toString("latin1")).toBe(bytes);
  });

  it.each([
    ["a length that is not a multiple of 4", "YWJjZ"],
    ["a character outside the alphabet", "YW-j"],
    ["padding inside", "YQ==YQ=="],
    ["three '='", "Y==="],
    ["whitespace (callers that ignore it strip it first)", "YW Jj"],
  ])("decodeBase64 refuses %s", (_name, text) => {
    expect(decodeBase64(text)).toBeUndefined();
  });

  it("passes bodies through with encoding none, both ways", () => {
    expect(encodeBody("{not base64}", "none")).toBe("{not base64}");
    expect(decodeBody("{not base64}", "none")).toBe("{not base64}");
  });
});

/**
 * Coordinator events must reach Application Insights unsampled. The Node worker hands every `context.*` log to the
 * host as a user log of category `Function.<name>.User`; the host filters it by `logging.logLevel` and sends what
 * passes as Trace telemetry (the traces table). The worker has no way to send customEvents (the host turns only
 * metrics into another type), and adaptive sampling is chosen per telemetry type: so Trace must be excluded.
 */
describe("coordinator events survive Application Insights sampling", () => {
  interface HostLogging {
    logging: {
      logLevel: Record<string, string>;
      applicationInsights: { samplingSettings: { isEnabled: boolean; excludedTypes?: string; includedTypes?: string } };
    };
  }
  const logging = (host as unknown as HostLogging).logging;
  const LEVELS = ["Trace", "Debug", "Information", "Warning", "Error", "Critical", "None"];

  /** The level the host applies to a log category: the longest `logLevel` key that prefixes it, else `default`. */
  function effectiveLevel(category: string): string {
    const keys = Object.keys(logging.logLevel).filter(
      (key) => key !== "default" && (category === key || category.startsWith(`${key}.`)),
    );
    const longest = keys.sort((a, b) => b.length - a.length)[0];
    return logging.logLevel[longest ?? "default"] ?? "Information";
  }

  /** Every function the coordinator registers, by the names it registers them under. */
  const functionNames = registeredNames();

  it("sampling leaves Trace telemetry (where the events land) alone", () => {
    const settings = logging.applicationInsights.samplingSettings;
    const types = (value: string | undefined): string[] =>
      (value ?? "")
        .split(";")
        .map((type) => type.trim().toLowerCase())
        .filter((type) => type !== "");
    if (settings.isEnabled) {
      expect(types(settings.excludedTypes)).toContain("trace");
      expect(types(settings.includedTypes)).not.toContain("trace");
    }
  });

  it("the host exports OpenTelemetry (Flex Consumption), and the app's own records are not sent twice", () => {
    // The host exports its logs and requests with OpenTelemetry to APPLICATIONINSIGHTS_CONNECTION_STRING (with the
    // identity of APPLICATIONINSIGHTS_AUTHENTICATION_STRING); the app exports its events and log lines itself
    // (src/app/telemetry/) and keeps them in the invocation's log only at debug, which host.json's level drops.
    expect((host as unknown as { telemetryMode?: string }).telemetryMode).toBe("OpenTelemetry");
    for (const name of functionNames)
      expect(LEVELS.indexOf(effectiveLevel(`Function.${name}.User`)), `Function.${name}.User`).toBeGreaterThan(
        LEVELS.indexOf("Debug"),
      );
  });

  it("the user logs of every function pass host.json's level filter at Information", () => {
    expect(functionNames).toEqual(
      expect.arrayContaining(["coordinator", "worker", "submitJob", "getJob", "getLeader", "stepDown"]),
    );
    for (const name of functionNames) {
      expect(LEVELS.indexOf(effectiveLevel(`Function.${name}.User`)), `Function.${name}.User`).toBeLessThanOrEqual(
        LEVELS.indexOf("Information"),
      );
    }
  });

  it("the sink logs every event type except lease-renewed at information, as one line that parses back", () => {
    const lines: { level: string; message: string }[] = [];
    const context = new InvocationContext({
      functionName: "coordinator",
      invocationId: "inv-1",
      logHandler: (level, ...args) => lines.push({ level, message: args.map(String).join(" ") }),
    });
    const sink = sinkFor(context);
    const types = Object.keys(EVERY_EVENT_TYPE) as AppEventType[];
    for (const [index, type] of types.entries())
      sink.emit({
        type,
        instanceId: "westeurope:abc-1",
        atMs: 1_700_000_000_000 + index,
        epoch: 7,
        jobId: "j-1",
      } as AppEvent);
    expect(lines).toHaveLength(types.length);
    for (const [index, type] of types.entries()) {
      expect(lines[index]?.level, type).toBe(type === "lease-renewed" ? "debug" : "information");
      expect(parseEventLine(lines[index]?.message ?? "")).toEqual({
        type,
        instanceId: "westeurope:abc-1",
        atMs: 1_700_000_000_000 + index,
        epoch: 7,
        jobId: "j-1",
      });
    }
  });
});

/** The names `registerCoordinator` gives the functions it registers with its defaults, on a recording `app`. */
function registeredNames(): string[] {
  const names: string[] = [];
  const record = (name: string): void => {
    names.push(name);
  };
  const app: FunctionsApp = {
    timer: record,
    storageQueue: record,
    http: record,
    hook: { appTerminate: () => undefined },
  };
  registerCoordinator(app, { taskKinds: [groupByKind], env: {} });
  return names;
}
