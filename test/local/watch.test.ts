import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import type { JobStatus } from "azure-leader-coordinator/internal";
import type { InstanceProcess } from "../../dev/src/local/instances";
import { LiveView } from "../../dev/src/local/liveView";
import { describeEvent } from "../../dev/src/local/report";
import { printEndpoints } from "../../dev/src/local/runParts";
import type { LocalRunResult } from "../../dev/src/local/summary";
import { watchRun } from "../../dev/src/local/watch";

/** One live instance, as the watch loop reads it. */
function aliveInstance(): InstanceProcess {
  const state = {
    name: "instance-1",
    instanceId: "instance-1-1",
    pid: 1,
    role: "leader",
    startedAtMs: 0,
    recentLogs: [],
  };
  return { alive: true, state } as unknown as InstanceProcess;
}

function running(id: string): JobStatus {
  return {
    id,
    kind: "word-count",
    status: "running",
    progress: { total: 10, dispatched: 10, done: 4, failed: 0, skipped: 0 },
    aggregate: undefined,
    failures: [],
    createdAt: new Date(0).toISOString(),
    completedAt: undefined,
    lastEpoch: 1,
  };
}

describe("the live view of a local run without a job of its own", () => {
  it("shows the job the app registered last (one submitted with enqueue), by its status", async () => {
    const out = new PassThrough();
    let printed = "";
    out.on("data", (chunk: Buffer) => (printed += chunk.toString()));
    const view = new LiveView(out, "plain", "local run");
    const id = "3f2a9c1e-7b4d-4e2a-9c1e-7b4d4e2a9c1e";
    const reads: string[] = [];
    await watchRun({
      instances: [aliveInstance()],
      view,
      startedMs: Date.now(),
      options: { durationS: 1 },
      latestJobId: () => id,
      readJob: (jobId) => {
        reads.push(jobId);
        return Promise.resolve(running(jobId));
      },
    });
    expect(printed).toContain(`job ${id} running`);
    expect(printed).not.toContain("not submitted yet");
    expect(reads).toContain(id);
  });

  it("names jobs by their whole id, which GET /api/jobs/{id} and enqueue --status take", () => {
    const id = "3f2a9c1e-7b4d-4e2a-9c1e-7b4d4e2a9c1e";
    const base = { kind: "event", pid: 1, instanceId: "instance-1-1", atMs: 0, epoch: 2, jobId: id } as const;
    expect(describeEvent({ ...base, type: "job-registered" })).toBe(`instance-1-1: job-registered ${id} (epoch 2)`);
  });
});

describe("what a local run prints once its instances serve", () => {
  it("the embedded Azurite's connection string, to seed input blobs with before enqueue", () => {
    const connectionString =
      "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:40001/devstoreaccount1;QueueEndpoint=http://127.0.0.1:40002/devstoreaccount1;";
    const instance = aliveInstance();
    Object.assign(instance.state, {
      httpPort: 7071,
      httpRoutes: [{ functionName: "submitJob", methods: ["POST"], template: "api/jobs" }],
    });
    const lines: string[] = [];
    const result = { storage: "azurite", connectionString } as unknown as LocalRunResult;
    printEndpoints([instance], result, (text) => lines.push(text));
    expect(lines.join("\n")).toContain(connectionString);
  });
});
