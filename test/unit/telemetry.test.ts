import { describe, expect, it } from "vitest";
import type { Sink } from "../../src/app/context";
import { parseEventLine, type AppEvent, type AppEventType } from "../../src/app/events";
import { handleWorkMessage, runCoordinatorTick, submitJob } from "../../src/app/operations";
import { METRIC_NAMES } from "../../src/app/telemetry/metrics";
import { LEDGER_KEY, type Ledger } from "../../src/coordination/state/grantLedger";
import { CUSTOM_EVENT_NAME, MAX_ATTRIBUTE_BYTES } from "../../src/app/telemetry/records";
import { Telemetry, type InvocationInfo } from "../../src/app/telemetry/telemetry";
import { GROUP_BY_CSV_JOB as JOB } from "../support/csvJob";
import { FakeLeaseStore } from "../support/FakeLeaseStore";
import { EVERY_EVENT_TYPE } from "../support/eventTypes";
import { memoryApp } from "../support/memoryApp";
import { recordingTelemetry, type MetricPoint } from "../support/telemetryHarness";

const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const INVOCATION: InvocationInfo = {
  functionName: "coordinator",
  invocationId: "inv-1",
  traceParent: `00-${TRACE_ID}-b7ad6b7169203331-01`,
};

/** The invocation's own log, as the Functions adapter gives it: every line with its level. */
function contextSink(): Sink & { lines: { level: string; message: string }[] } {
  const lines: { level: string; message: string }[] = [];
  const at = (level: string) => (message: string) => {
    lines.push({ level, message });
  };
  return {
    lines,
    logger: { verbose: at("debug"), info: at("information"), warn: at("warning"), error: at("error") },
    emit: (event) =>
      lines.push({ level: event.type === "lease-renewed" ? "debug" : "information", message: event.type }),
  };
}

/** Plays the worker function: every unit on the work queue handled, its outcome counted as functions/worker.ts does. */
async function drain(world: ReturnType<typeof memoryApp>, telemetry: Telemetry, sink: Sink): Promise<number> {
  const messages = await world.workQueue.receive(32, 30);
  for (const message of messages) {
    const outcome = await handleWorkMessage(world.app, sink, JSON.parse(message.text ?? "null") as unknown, {
      id: message.id,
      dequeueCount: 1,
    });
    telemetry.recordWork(outcome);
    await world.workQueue.delete(message);
  }
  return messages.length;
}

/** An attribute that must be a string (JSON of an array field). */
function text(value: unknown): string {
  if (typeof value !== "string") throw new Error(`expected a string attribute, got ${JSON.stringify(value)}`);
  return value;
}

const point = (
  points: MetricPoint[],
  name: string,
  attributes: Record<string, unknown> = {},
): MetricPoint | undefined =>
  points.find(
    (candidate) =>
      candidate.name === name &&
      Object.entries(attributes).every(([key, value]) => candidate.attributes[key] === value),
  );

describe("telemetry: every coordinator event is a log record whose fields are attributes", () => {
  it("a tick's events become custom-event records with their fields, the invocation's id and function, in its trace", async () => {
    const world = memoryApp();
    await submitJob(world.app, JOB, { wake: false });
    const { telemetry, records } = recordingTelemetry();
    const inner = contextSink();
    const sink = telemetry.instrument(inner, INVOCATION);
    expect(await runCoordinatorTick(world.app, sink)).toBe("completed");

    // The invocation's own log has every event, at debug, as a line that parses back.
    const events = inner.lines.map((line) => parseEventLine(line.message)).filter((event) => event !== undefined);
    expect(inner.lines.every((line) => line.level === "debug")).toBe(true);
    const exported = events.filter((event) => event.type !== "lease-renewed");
    expect(exported.map((event) => event.type)).toEqual(
      expect.arrayContaining(["lease-acquired", "step-started", "job-registered", "lease-released", "step-completed"]),
    );
    const eventRecords = (await records()).filter((record) => record.attributes[CUSTOM_EVENT_NAME] !== undefined);
    expect(eventRecords.map((record) => record.eventName)).toEqual(exported.map((event) => event.type));

    const registered = events.find((event) => event.type === "job-registered");
    const record = eventRecords.find((candidate) => candidate.eventName === "job-registered");
    expect(record?.attributes).toEqual({
      [CUSTOM_EVENT_NAME]: "job-registered",
      type: "job-registered",
      instanceId: "unit-wake",
      atMs: registered?.atMs,
      epoch: registered && "epoch" in registered ? registered.epoch : -1,
      jobId: registered && "jobId" in registered ? registered.jobId : "",
      InvocationId: "inv-1",
      "ai.operation.name": "coordinator",
    });
    expect(record?.spanContext?.traceId).toBe(TRACE_ID);
    expect(record?.resource.attributes).toMatchObject({
      "service.name": "func-test",
      "service.instance.id": "test-instance",
    });
    const completed = eventRecords.find((candidate) => candidate.eventName === "step-completed");
    expect(completed?.attributes).toMatchObject({
      passes: expect.any(Number) as unknown,
      activeJobs: 1,
      registered: 1,
    });
    expect(JSON.parse(text(completed?.attributes.jobs))).toEqual([
      expect.objectContaining({ total: 3, dispatched: expect.any(Number) as unknown, done: 0, failed: 0 }),
    ]);
  });

  it("every event type maps to a record of its name and severity; arrays keep whole elements under 8,000 bytes", async () => {
    const { telemetry, records } = recordingTelemetry({ minLevel: "debug" });
    const sink = telemetry.instrument(contextSink(), INVOCATION);
    const types = Object.keys(EVERY_EVENT_TYPE) as AppEventType[];
    for (const type of types) sink.emit({ type, instanceId: "i-1", atMs: 1, epoch: 7, jobId: "j" } as AppEvent);
    const all = await records();
    expect(all.map((record) => record.eventName)).toEqual(types);
    const severity = (type: string) => all.find((record) => record.eventName === type)?.severityText;
    expect(severity("lease-renewed")).toBe("Debug");
    expect(severity("lease-lost")).toBe("Warning");
    expect(severity("job-completed")).toBe("Information");

    // 200 jobs' progress (about 80 bytes each) do not fit one custom dimension: whole entries do, the rest are counted.
    const jobs = Array.from({ length: 200 }, (_, index) => ({
      id: `0000000${index}-0000-4000-8000-000000000000`.slice(-36),
      total: 100_000,
      dispatched: 50_000,
      done: 49_000,
      failed: index,
    }));
    sink.emit({ type: "step-completed", instanceId: "i-1", atMs: 2, epoch: 7, jobs, completedJobs: [] } as never);
    const attributes = (await records()).at(-1)?.attributes ?? {};
    const kept = JSON.parse(text(attributes.jobs)) as unknown[];
    expect(Buffer.byteLength(text(attributes.jobs))).toBeLessThanOrEqual(MAX_ATTRIBUTE_BYTES);
    expect(kept.length).toBeGreaterThan(50);
    expect(kept).toEqual(jobs.slice(0, kept.length));
    expect(attributes.jobsOmitted).toBe(200 - kept.length);
    expect(attributes.completedJobs).toBe("[]");
    expect(attributes).not.toHaveProperty("completedJobsOmitted");
  });

  it("the logger's properties arrive as attributes of the log line's record", async () => {
    const world = memoryApp();
    const { telemetry, records } = recordingTelemetry();
    const sink = telemetry.instrument(contextSink(), { functionName: "worker", invocationId: "inv-2" });
    await handleWorkMessage(world.app, sink, { v: 1, jobId: "NOT VALID", item: 0 }, { id: "msg-1", dequeueCount: 1 });
    const all = await records();
    const line = all.find((record) => record.eventName === undefined);
    expect(line).toMatchObject({
      severityText: "Warning",
      body: expect.stringContaining("Work message msg-1 rejected") as unknown,
    });
    expect(line?.attributes).toEqual({ instanceId: "unit-wake", InvocationId: "inv-2", "ai.operation.name": "worker" });
    expect(all.find((record) => record.eventName === "message-rejected")?.attributes).toMatchObject({
      queue: "work",
      messageId: "msg-1",
      reason: expect.any(String) as unknown,
    });
  });

  it("routine renewals and debug lines stay out at the default level (Information, as host.json), in at debug", async () => {
    const renewal = { type: "lease-renewed", instanceId: "i-1", atMs: 1, epoch: 3, latencyMs: 12 } as const;
    const quiet = recordingTelemetry();
    const quietSink = quiet.telemetry.instrument(contextSink(), INVOCATION);
    quietSink.emit(renewal);
    quietSink.logger.verbose("routine");
    expect(await quiet.records()).toEqual([]);
    const verbose = recordingTelemetry({ minLevel: "debug" });
    const verboseSink = verbose.telemetry.instrument(contextSink(), INVOCATION);
    verboseSink.emit(renewal);
    verboseSink.logger.verbose("routine", { n: 1 });
    expect(
      (await verbose.records()).map((record) => [record.eventName, record.body, record.attributes.latencyMs]),
    ).toEqual([
      ["lease-renewed", "lease-renewed", 12],
      [undefined, "routine", undefined],
    ]);
  });

  it("without export the invocation's own sink is used as it is", () => {
    const inner = contextSink();
    expect(Telemetry.off.instrument(inner, INVOCATION)).toBe(inner);
    expect(Telemetry.off.exporting).toBe(false);
  });
});

describe("telemetry: the coordinator's metrics", () => {
  it("a job's run counts items done and failed per kind, times its steps, and reports the epoch and active jobs", async () => {
    const world = memoryApp();
    await submitJob(world.app, JOB, { wake: false });
    const { telemetry, metrics } = recordingTelemetry();
    const inner = contextSink();
    const sink = telemetry.instrument(inner, INVOCATION);
    let steps = 0;
    for (let round = 0; round < 10; round++) {
      await runCoordinatorTick(world.app, sink);
      steps++;
      if (inner.lines.some((line) => line.message.includes('"type":"job-completed"'))) break;
      while ((await drain(world, telemetry, sink)) > 0) {
        // every unit handled
      }
    }
    const points = await metrics();
    expect(point(points, METRIC_NAMES.items, { kind: "group-by", outcome: "done" })?.value).toBe(2);
    expect(point(points, METRIC_NAMES.items, { kind: "group-by", outcome: "failed" })?.value).toBe(1);
    const durations = points.filter((candidate) => candidate.name === METRIC_NAMES.stepDuration);
    expect(durations.reduce((sum, candidate) => sum + (candidate.count ?? 0), 0)).toBe(steps);
    expect(durations.map((candidate) => candidate.attributes)).toContainEqual({
      outcome: "completed",
      trigger: "timer",
    });
    const events = inner.lines.map((line) => parseEventLine(line.message)).filter((event) => event !== undefined);
    const lastEpoch = events.filter((event) => "epoch" in event).at(-1);
    expect(point(points, METRIC_NAMES.epoch)?.value).toBe(lastEpoch && "epoch" in lastEpoch ? lastEpoch.epoch : -1);
    expect(point(points, METRIC_NAMES.activeJobs)?.value).toBe(0);
  });

  it("leader changes count terms begun by another instance, not a leader's next term of its own", async () => {
    const store = new FakeLeaseStore();
    const first = memoryApp({ store, instanceId: "instance-a" });
    const second = memoryApp({ store, instanceId: "instance-b" });
    const { telemetry, metrics } = recordingTelemetry();
    const tick = (world: ReturnType<typeof memoryApp>) =>
      runCoordinatorTick(world.app, telemetry.instrument(contextSink(), INVOCATION));
    expect(await tick(first)).toBe("completed");
    expect(await tick(first)).toBe("completed");
    expect(await metrics()).not.toContainEqual(expect.objectContaining({ name: METRIC_NAMES.leaderChanges }));
    expect(await tick(second)).toBe("completed");
    expect(await tick(first)).toBe("completed");
    expect(point(await metrics(), METRIC_NAMES.leaderChanges)?.value).toBe(2);
  });

  it("each job removal that failed (job-removal-failed) counts in the retention failures metric (issue 37, hole 3)", async () => {
    const { telemetry, metrics } = recordingTelemetry();
    const sink = telemetry.instrument(contextSink(), INVOCATION);
    const failure = { instanceId: "i", epoch: 3, jobId: "j", endedAtMs: 1, retryAtMs: 2, error: "409" } as const;
    sink.emit({ type: "job-removal-failed", atMs: 10, attempts: 1, ...failure });
    sink.emit({ type: "job-removal-failed", atMs: 20, attempts: 2, ...failure });
    expect(point(await metrics(), METRIC_NAMES.removalFailures)?.value).toBe(2);
  });

  it("an item that held the event loop too long counts once per item, by kind (issue 37)", async () => {
    const { telemetry, metrics } = recordingTelemetry();
    const sink = telemetry.instrument(contextSink(), INVOCATION);
    const held = (kind: string, item: number): AppEvent => ({
      type: "item-held-event-loop",
      instanceId: "instance-a",
      atMs: 1000,
      jobId: "job-1",
      kind,
      item,
      heldMs: 3000,
      limitMs: 1250,
    });
    sink.emit(held("slow-kind", 0));
    sink.emit(held("slow-kind", 1));
    sink.emit(held("other-kind", 0));
    const points = await metrics();
    expect(point(points, METRIC_NAMES.itemsHeldLoop, { kind: "slow-kind" })?.value).toBe(2);
    expect(point(points, METRIC_NAMES.itemsHeldLoop, { kind: "other-kind" })?.value).toBe(1);
  });

  it("one sample gives each queue's depth and the fold lag (the oldest result's age), whoever leads", async () => {
    const world = memoryApp();
    const { telemetry, metrics } = recordingTelemetry();
    await world.workQueue.send(["a", "b", "c"]);
    await world.resultsQueue.send(["r1"]);
    world.resultsQueue.nowMs += 42_000;
    await world.resultsQueue.send(["r2"]);
    await world.workPoisonQueue.send(["p"]);
    await telemetry.sampleQueues(world.app, contextSink());
    const points = await metrics();
    const depth = (queue: string) => point(points, METRIC_NAMES.queueDepth, { queue })?.value;
    expect([depth("work"), depth("results"), depth("work-poison"), depth("results-poison")]).toEqual([3, 2, 1, 0]);
    expect(point(points, METRIC_NAMES.queueDepth, { queue: "work" })?.attributes.queueName).toBe("work");
    expect(point(points, METRIC_NAMES.foldLag)?.value).toBe(42);
  });

  it("one sample gives each limited pool's use against its limit, from the grant ledger (issue 42)", async () => {
    const world = memoryApp();
    const { telemetry, metrics } = recordingTelemetry();
    const nowMs = Date.now();
    const ledger: Ledger = {
      v: 1,
      grants: [
        {
          id: "grant-aaaa",
          jobId: "j",
          first: 0,
          count: 10,
          grantedAtMs: nowMs,
          expiresAtMs: nowMs + 600_000,
          holds: [{ pool: "k:geo", c: 3, r: 4, windowMs: 1000 }],
        },
      ],
      waiting: { "k:geo": { atMs: nowMs, items: 90 } },
      limits: { "k:geo": { concurrency: 5, rate: { limit: 10, periodMs: 1000, permits: 10, windowMs: 1000 } } },
    };
    await world.app.state.write(LEDGER_KEY, ledger, 1, { ifNoneMatch: "*" });
    await telemetry.sampleQueues(world.app, contextSink());
    const points = await metrics();
    expect(point(points, METRIC_NAMES.limitRunning, { pool: "k:geo" })?.value).toBe(3);
    expect(point(points, METRIC_NAMES.limitConcurrency, { pool: "k:geo" })?.value).toBe(5);
    expect(point(points, METRIC_NAMES.limitRatePermits, { pool: "k:geo" })?.value).toBe(4);
    expect(point(points, METRIC_NAMES.limitWaiting, { pool: "k:geo" })?.value).toBe(90);
  });

  it("a failed sample is logged on the invocation, never thrown", async () => {
    const world = memoryApp();
    const { telemetry } = recordingTelemetry();
    world.workQueue.approximateCount = () => Promise.reject(new Error("storage is down (simulated)"));
    const inner = contextSink();
    await expect(telemetry.sampleQueues(world.app, inner)).resolves.toBeUndefined();
    expect(inner.lines).toEqual([
      { level: "warning", message: "Telemetry could not sample the queue depths: storage is down (simulated)" },
    ]);
  });
});
