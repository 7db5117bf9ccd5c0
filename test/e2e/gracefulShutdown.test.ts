import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { afterAll, describe, expect, it } from "vitest";
import { ChaosCluster } from "../../scripts/verification/chaos/cluster";
import { JobTracker } from "../../scripts/verification/chaos/jobs";
import type { EventRecord } from "../../dev/src/local/eventLog";

/** One tick of the schedule below. */
const TICK_MS = 5000;
/** Process scheduling and request latency on a 2-core machine. */
const SLACK_MS = 1500;

describe("graceful shutdown on the local host (2 OS processes on Azurite)", () => {
  const outDir = mkdtempSync(join(tmpdir(), "e2e-shutdown-"));
  let cluster: ChaosCluster | undefined;
  afterAll(async () => {
    await cluster?.stop();
    rmSync(outDir, { recursive: true, force: true });
  });

  it("a leader SIGTERMed mid-step aborts with reason shutdown and releases; another instance leads within one tick", async () => {
    cluster = await ChaosCluster.start({
      eventsPath: join(outDir, "events.jsonl"),
      logsDir: join(outDir, "logs"),
      env: {
        COORDINATOR_SCHEDULE: "*/5 * * * * *",
        // No worker runs, so the job never finishes and every step polls for its whole budget (below the 5 s tick, as
        // the settings require): the SIGTERM lands mid-step, and without a shutdown signal the step would hold the
        // lease until its budget ran out and end as completed, not aborted.
        STEP_BUDGET_MS: "4000",
        "AzureWebJobs.worker.Disabled": "true",
      },
    });
    const running = cluster;
    const blobs = BlobServiceClient.fromConnectionString(running.azurite.connectionString);
    const jobs = new JobTracker(running.client(), blobs.getContainerClient(running.settings.INPUT_CONTAINER));
    const instances = [running.startInstance("instance-1"), running.startInstance("instance-2")];
    await running.waitReady(instances);
    const job = await jobs.submitDemo("shutdown", 20, 1);

    const registered = await running.waitForEvent(
      (record) => record.type === "job-registered" && record.jobId === job.id,
      20_000,
    );
    expect(registered, "no step registered the job within 20 s").toBeDefined();
    const leaderId = registered?.instance ?? "";
    const epoch = registered?.epoch ?? -1;
    const leader = instances.find((instance) => instance.id === leaderId);
    expect(leader, `the job was registered by ${leaderId}, which is not one of this test's instances`).toBeDefined();
    await new Promise((done) => setTimeout(done, 500));
    const marker = running.records.length;
    const signalledAtMs = Date.now();
    expect(leader?.process.signal("SIGTERM")).toBe(true);

    const ofTerm = (type: string) => (record: EventRecord) =>
      record.type === type && record.instance === leaderId && record.epoch === epoch;
    const lost = await running.waitForEvent(ofTerm("lease-lost"), 8_000, marker);
    expect(lost?.reason, `the leader's term of epoch ${epoch} did not end with lease-lost within 8 s of SIGTERM`).toBe(
      "shutdown",
    );
    const aborted = await running.waitForEvent(ofTerm("step-aborted"), 2_000, marker);
    expect(aborted?.reason).toBe("shutdown");
    const released = await running.waitForEvent(ofTerm("lease-released"), 5_000, marker);
    expect(released, "the shut-down leader did not release its lease").toBeDefined();
    const successor = await running.waitForEvent(
      (record) => record.type === "lease-acquired" && record.instance !== leaderId && (record.epoch ?? 0) > epoch,
      10_000,
      marker,
    );
    expect(successor, "no other instance acquired the lease within 10 s").toBeDefined();

    const releasedAtMs = Date.parse(released?.ts ?? "");
    const takeoverMs = Date.parse(successor?.ts ?? "") - releasedAtMs;
    // Within one tick of the release, far below the 15 s a lease left to expire would take.
    expect(takeoverMs).toBeLessThanOrEqual(TICK_MS + SLACK_MS);
    expect(Date.parse(successor?.ts ?? "") - signalledAtMs).toBeLessThan(TICK_MS + 2 * SLACK_MS + 2000);
    // The instance then exits by itself, cleanly.
    await leader?.process.exited;
    expect(leader?.process.state.exit).toMatchObject({ code: 0, killedByRunner: false });
  }, 120_000);
});
