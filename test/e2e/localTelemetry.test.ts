import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { afterAll, describe, expect, it } from "vitest";
import { ChaosCluster } from "../../scripts/verification/chaos/cluster";
import { JobTracker } from "../../scripts/verification/chaos/jobs";

/**
 * The local host exports the app's OpenTelemetry to a file (COORDINATOR_TELEMETRY_FILE) through the real
 * registrations: the invocations' sinks (functions/invocation.ts), the worker's counts (functions/worker.ts), the
 * timer's queue sample (functions/coordinator.ts), and the flush of the app-terminate hook (functions/hooks.ts). The
 * local host's own event log keeps working meanwhile (it reads the events from the invocations' debug lines).
 */

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: number | string; doubleValue?: number };
}
interface OtlpLine {
  resourceLogs?: { scopeLogs: { logRecords: { eventName?: string; attributes?: OtlpAttribute[] }[] }[] }[];
  resourceMetrics?: {
    scopeMetrics: {
      metrics: {
        name: string;
        sum?: { dataPoints: { attributes?: OtlpAttribute[]; asDouble?: number; asInt?: number | string }[] };
        gauge?: { dataPoints: { attributes?: OtlpAttribute[]; asDouble?: number; asInt?: number | string }[] };
      }[];
    }[];
  }[];
}

/** Polls `condition` every 200 ms until it holds or `timeoutMs` pass. */
async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((done) => setTimeout(done, 200));
  }
  return true;
}

const attribute = (attributes: OtlpAttribute[] | undefined, key: string): unknown => {
  const value = attributes?.find((candidate) => candidate.key === key)?.value;
  return value?.stringValue ?? (value?.intValue === undefined ? value?.doubleValue : Number(value.intValue));
};

describe("OpenTelemetry from the local host (2 OS processes on Azurite) to an OTLP/JSON file", () => {
  const outDir = mkdtempSync(join(tmpdir(), "e2e-telemetry-"));
  const file = join(outDir, "otlp.jsonl");
  let cluster: ChaosCluster | undefined;
  afterAll(async () => {
    await cluster?.stop();
    rmSync(outDir, { recursive: true, force: true });
  });

  it("a job's events arrive as records with their fields, and its items, steps and queues as metrics", async () => {
    cluster = await ChaosCluster.start({
      eventsPath: join(outDir, "events.jsonl"),
      logsDir: join(outDir, "logs"),
      env: {
        COORDINATOR_TELEMETRY_FILE: file,
        OTEL_METRIC_EXPORT_INTERVAL: "1000",
        COORDINATOR_SCHEDULE: "*/5 * * * * *",
        STEP_BUDGET_MS: "4000",
      },
    });
    const running = cluster;
    const blobs = BlobServiceClient.fromConnectionString(running.azurite.connectionString);
    const jobs = new JobTracker(running.client(), blobs.getContainerClient(running.settings.INPUT_CONTAINER));
    const instances = [running.startInstance("instance-1"), running.startInstance("instance-2")];
    await running.waitReady(instances);
    const job = await jobs.submitDemo("telemetry", 12, 1);
    const completed = await running.waitForEvent(
      (record) => record.type === "job-completed" && record.jobId === job.id,
      90_000,
    );
    if (completed === undefined) throw new Error("the local host's event log saw no job-completed within 90 s");
    // The step that completed the job ends a moment later (the ended job's marker, the index). Stopping the instances
    // before then aborts it with reason shutdown, and no step-completed is ever emitted: wait for it.
    const stepDone = await running.waitForEvent(
      (record) =>
        record.type === "step-completed" && record.instance === completed.instance && record.epoch === completed.epoch,
      30_000,
      running.records.indexOf(completed),
    );
    expect(stepDone, "the step that completed the job did not complete within 30 s").toBeDefined();
    // The timer samples the queues after each tick; wait for a sample to be exported (every second here).
    const sampled = await waitFor(
      () => existsSync(file) && readFileSync(file, "utf8").includes('"coordinator.queue.depth"'),
      30_000,
    );
    expect(sampled, "no queue sample was exported within 30 s").toBe(true);
    await Promise.all(instances.map((instance) => instance.process.stop(35_000)));

    const lines = readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as OtlpLine);
    const records = lines.flatMap((line) =>
      (line.resourceLogs ?? []).flatMap((logs) => logs.scopeLogs.flatMap((scope) => scope.logRecords)),
    );
    const ofJob = records.filter((record) => attribute(record.attributes, "jobId") === job.id);
    expect(ofJob.map((record) => record.eventName)).toEqual(["job-registered", "job-completed"]);
    const done = ofJob.find((record) => record.eventName === "job-completed");
    expect(attribute(done?.attributes, "done")).toBe(12);
    expect(attribute(done?.attributes, "epoch")).toBe(completed.epoch);
    expect(attribute(done?.attributes, "ai.operation.name")).toEqual(expect.any(String));
    expect(
      records.some(
        (record) => record.eventName === "step-completed" && attribute(record.attributes, "epoch") === completed.epoch,
      ),
    ).toBe(true);

    const points = lines.flatMap((line) =>
      (line.resourceMetrics ?? []).flatMap((resource) =>
        resource.scopeMetrics.flatMap((scope) =>
          scope.metrics.flatMap((metric) =>
            [...(metric.sum?.dataPoints ?? []), ...(metric.gauge?.dataPoints ?? [])].map((point) => ({
              name: metric.name,
              attributes: point.attributes,
              value: Number(point.asDouble ?? point.asInt ?? 0),
            })),
          ),
        ),
      ),
    );
    const itemsDone = points
      .filter((point) => point.name === "coordinator.items" && attribute(point.attributes, "outcome") === "done")
      .reduce((sum, point) => sum + point.value, 0);
    expect(itemsDone).toBeGreaterThanOrEqual(12);
    expect(points.some((point) => point.name === "coordinator.queue.depth")).toBe(true);
    expect(points.some((point) => point.name === "coordinator.epoch")).toBe(true);
    const names = new Set(
      lines.flatMap((line) =>
        (line.resourceMetrics ?? []).flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.name))),
      ),
    );
    expect(names).toContain("coordinator.step.duration");
    expect(names).toContain("coordinator.fold.lag");
  }, 180_000);
});
