import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHILD_TRACE_ID } from "../support/telemetryChild";

/**
 * The app's telemetry leaves the process as its users would receive it, set up from the environment exactly as the
 * Function App does (`getTelemetry()`, in a child process): as OTLP/JSON lines in a file (the local host), and through
 * the real Azure Monitor exporter to an HTTPS stand-in of Application Insights' ingestion endpoint, which records the
 * envelopes it is sent — what becomes `customEvents`, `traces` and `customMetrics` rows with their `customDimensions`.
 */

const exec = promisify(execFile);
const requireHere = createRequire(__filename);
const TSX = pathToFileURL(requireHere.resolve("tsx")).href;
const CHILD = path.join(__dirname, "..", "support", "telemetryChild.ts");

const dir = mkdtempSync(path.join(tmpdir(), "telemetry-export-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the child with only these variables (and PATH, HOME): no telemetry setting leaks in from the test's shell. */
async function runChild(env: Record<string, string>): Promise<void> {
  await exec(process.execPath, ["--import", TSX, CHILD], {
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? dir, ...env },
    timeout: 60_000,
  });
}

interface OtlpValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
const attributesOf = (attributes: OtlpAttribute[] | undefined): Record<string, unknown> =>
  Object.fromEntries(
    (attributes ?? []).map(({ key, value }) => [
      key,
      value.stringValue ??
        (value.intValue === undefined ? undefined : Number(value.intValue)) ??
        value.doubleValue ??
        value.boolValue,
    ]),
  );

describe("telemetry to a file as OTLP/JSON lines (COORDINATOR_TELEMETRY_FILE)", () => {
  const file = path.join(dir, "otlp.jsonl");
  let lines: {
    resourceLogs?: {
      resource: { attributes: OtlpAttribute[] };
      scopeLogs: { logRecords: Record<string, unknown>[] }[];
    }[];
    resourceMetrics?: {
      scopeMetrics: { metrics: { name: string; sum?: unknown; gauge?: unknown; histogram?: unknown }[] }[];
    }[];
  }[] = [];

  beforeAll(async () => {
    await runChild({ COORDINATOR_TELEMETRY_FILE: file, WEBSITE_SITE_NAME: "func-x", WEBSITE_INSTANCE_ID: "abc" });
    lines = readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as (typeof lines)[number]);
  }, 90_000);

  it("each line is one export request; the records are the events (with their fields as attributes) and log lines", () => {
    const resourceLogs = lines.flatMap((line) => line.resourceLogs ?? []);
    expect(attributesOf(resourceLogs[0]?.resource.attributes)).toMatchObject({
      "service.name": "func-x",
      "service.instance.id": expect.stringMatching(/^abc-\d+$/) as unknown,
    });
    const records = resourceLogs.flatMap((logs) => logs.scopeLogs.flatMap((scope) => scope.logRecords));
    const named = records.map((record) => record.eventName ?? (record.body as OtlpValue).stringValue);
    expect(named).toEqual([
      "lease-acquired",
      "step-started",
      "job-registered",
      "Work message m-1 rejected to work-items-poison: not JSON",
      "step-completed",
    ]);
    const registered = records.find((record) => record.eventName === "job-registered");
    expect(attributesOf(registered?.attributes as OtlpAttribute[])).toEqual({
      "microsoft.custom_event.name": "job-registered",
      type: "job-registered",
      instanceId: "func-x-abc-1",
      atMs: 1_700_000_000_020,
      epoch: 7,
      jobId: "job-1",
      InvocationId: "inv-1",
      "ai.operation.name": "coordinator",
    });
    expect(registered?.traceId).toBe(CHILD_TRACE_ID);
    // The record's time is the event's.
    expect(registered?.timeUnixNano).toBe("1700000000020000000");
    const warning = records.find((record) => record.eventName === undefined);
    expect(warning?.severityText).toBe("Warning");
    expect(attributesOf(warning?.attributes as OtlpAttribute[])).toMatchObject({ messageId: "m-1" });
  });

  it("the metrics are there: items per kind and outcome, step duration, queue depths, fold lag, epoch, leader changes", () => {
    const names = lines.flatMap((line) =>
      (line.resourceMetrics ?? []).flatMap((resource) =>
        resource.scopeMetrics.flatMap((scope) => scope.metrics.map((metric) => metric.name)),
      ),
    );
    expect(new Set(names)).toEqual(
      new Set([
        "coordinator.items",
        "coordinator.step.duration",
        "coordinator.queue.depth",
        "coordinator.fold.lag",
        "coordinator.epoch",
        "coordinator.leader.changes",
        "coordinator.jobs.active",
      ]),
    );
  });
});

describe("telemetry to Application Insights through the Azure Monitor exporter (HTTPS stand-in of the ingestion endpoint)", () => {
  interface Envelope {
    name: string;
    tags: Record<string, string>;
    data: {
      baseType: string;
      baseData: {
        name?: string;
        message?: string;
        properties?: Record<string, string>;
        metrics?: { name: string; value: number; count: number }[];
      };
    };
  }
  const envelopes: Envelope[] = [];
  let server: Server | undefined;

  beforeAll(async () => {
    // A certificate for 127.0.0.1 that the child trusts (NODE_EXTRA_CA_CERTS): the exporter only speaks HTTPS.
    const key = path.join(dir, "key.pem");
    const cert = path.join(dir, "cert.pem");
    await exec("openssl", [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
    ]);
    server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        const body = Buffer.concat(chunks);
        const text = (request.headers["content-encoding"] === "gzip" ? gunzipSync(body) : body).toString();
        const sent = JSON.parse(text) as Envelope[];
        envelopes.push(...sent);
        response.writeHead(200, { "content-type": "application/json" });
        response.end(JSON.stringify({ itemsReceived: sent.length, itemsAccepted: sent.length, errors: [] }));
      });
    });
    const listening = server;
    await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", resolve));
    const { port } = listening.address() as { port: number };
    await runChild({
      APPLICATIONINSIGHTS_CONNECTION_STRING: `InstrumentationKey=00000000-0000-4000-8000-000000000001;IngestionEndpoint=https://127.0.0.1:${port}/`,
      NODE_EXTRA_CA_CERTS: cert,
      APPLICATIONINSIGHTS_STATSBEAT_DISABLED: "true",
      WEBSITE_SITE_NAME: "func-x",
      WEBSITE_INSTANCE_ID: "abc",
    });
  }, 90_000);

  afterAll(() => {
    server?.close();
  });

  it("each event is a custom event named by its type, its fields in customDimensions, in the invocation's operation", () => {
    const events = envelopes.filter((envelope) => envelope.data.baseType === "EventData");
    expect(events.map((envelope) => envelope.data.baseData.name)).toEqual([
      "lease-acquired",
      "step-started",
      "job-registered",
      "step-completed",
    ]);
    const registered = events.find((envelope) => envelope.data.baseData.name === "job-registered");
    expect(registered?.data.baseData.properties).toEqual({
      type: "job-registered",
      instanceId: "func-x-abc-1",
      atMs: "1700000000020",
      epoch: "7",
      jobId: "job-1",
      InvocationId: "inv-1",
    });
    expect(registered?.tags).toMatchObject({
      "ai.operation.id": CHILD_TRACE_ID,
      "ai.operation.name": "coordinator",
      "ai.cloud.role": "func-x",
      "ai.cloud.roleInstance": expect.stringMatching(/^abc-\d+$/) as unknown,
    });
    const completed = events.find((envelope) => envelope.data.baseData.name === "step-completed");
    expect(JSON.parse(completed?.data.baseData.properties?.jobs ?? "null")).toEqual([
      { id: "job-1", total: 3, dispatched: 3, done: 0, failed: 0 },
    ]);
  });

  it("a log line is a trace whose customDimensions are the logger's properties", () => {
    const traces = envelopes.filter((envelope) => envelope.data.baseType === "MessageData");
    expect(traces).toHaveLength(1);
    expect(traces[0]?.data.baseData).toMatchObject({
      message: "Work message m-1 rejected to work-items-poison: not JSON",
      properties: { instanceId: "func-x-abc-1", messageId: "m-1", InvocationId: "inv-1" },
    });
  });

  it("the metrics are customMetrics with their attributes in customDimensions", () => {
    const metrics = envelopes
      .filter((envelope) => envelope.data.baseType === "MetricData")
      .flatMap((envelope) =>
        (envelope.data.baseData.metrics ?? []).map((metric) => ({
          ...metric,
          properties: envelope.data.baseData.properties,
        })),
      );
    const find = (name: string, properties: Record<string, string> = {}) =>
      metrics.find(
        (metric) =>
          metric.name === name &&
          Object.entries(properties).every(([key, value]) => metric.properties?.[key] === value),
      );
    expect(find("coordinator.items", { kind: "group-by", outcome: "done" })?.value).toBe(2);
    expect(find("coordinator.items", { kind: "group-by", outcome: "failed" })?.value).toBe(1);
    expect(find("coordinator.queue.depth", { queue: "work", queueName: "work-items" })?.value).toBe(5);
    expect(find("coordinator.queue.depth", { queue: "work-poison" })?.value).toBe(1);
    expect(find("coordinator.fold.lag")?.value).toBe(42);
    expect(find("coordinator.epoch")?.value).toBe(7);
    expect(find("coordinator.leader.changes")?.value).toBe(1);
    expect(find("coordinator.step.duration", { outcome: "completed", trigger: "timer" })).toMatchObject({
      value: 1.5,
      count: 1,
    });
  });
});
