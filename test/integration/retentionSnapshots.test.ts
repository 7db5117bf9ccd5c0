import { BlobServiceClient } from "@azure/storage-blob";
import { describe, expect, it } from "vitest";
import { coordinationDeps, getJobStatus, submitJob } from "../../src/app/operations";
import { BlobFilesStore } from "../../src/azure/BlobFilesStore";
import { keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { uniqueName, useAzurite } from "../support/azuriteFixture";
import { newTestApp, runUntilComplete } from "../support/inProcessApp";

/**
 * Issue 37, hole 3, on Azurite: a blob with a snapshot (a backup tool's, an operator's) answers 409 SnapshotsPresent to
 * a plain delete, on every try. Retention deletes a job's blobs with their snapshots (`deleteSnapshots: "include"`):
 * the system container is the app's own, and nothing of an ended job stays for ever. A blob that still cannot be
 * deleted (a legal hold, an immutability policy, which Azurite does not model: test/unit/retentionTrouble.test.ts)
 * holds up only its own job.
 */
describe("retention of a job whose blobs have snapshots, on Azurite", () => {
  const env = useAzurite();
  const HOUR_MS = 3_600_000;

  /** Every blob and snapshot under `prefix` in the container. */
  async function blobsAndSnapshots(service: BlobServiceClient, container: string, prefix: string) {
    const names: string[] = [];
    for await (const blob of service.getContainerClient(container).listBlobsFlat({ prefix, includeSnapshots: true }))
      // A snapshot has its time; the blob itself none (undefined, though typed as a string).
      names.push((blob.snapshot as string | undefined) === undefined ? blob.name : `${blob.name}@snapshot`);
    return names.sort();
  }

  it("the files adapter deletes a blob together with its snapshots", async () => {
    const service = BlobServiceClient.fromConnectionString(env.azurite.connectionString);
    const container = service.getContainerClient(uniqueName("snapshots"));
    await container.create();
    const files = new BlobFilesStore(container);
    await files.writeText("jobs/a/spec.json", "{}");
    await container.getBlobClient("jobs/a/spec.json").createSnapshot();
    expect(await blobsAndSnapshots(service, container.containerName, "")).toEqual([
      "jobs/a/spec.json",
      "jobs/a/spec.json@snapshot",
    ]);
    await files.delete("jobs/a/spec.json");
    expect(await blobsAndSnapshots(service, container.containerName, "")).toEqual([]);
  });

  it("an ended job whose spec has a snapshot is removed whole after its retention, the snapshot with it", async () => {
    const { app, sink, events } = newTestApp(env.azurite.connectionString, { JOB_RETENTION_HOURS: "1" });
    const submitted = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items: [{ inline: "region,amount\neu,1" }],
    });
    if (!submitted.ok) throw new Error("submission refused");
    const { id } = submitted;
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, id))?.status === "completed");
    const step = (nowMs: number) =>
      app.elector.tryLead((term) =>
        runCoordinationStep({ ...coordinationDeps(app, sink), now: () => nowMs }, term, { budgetMs: 1000 }),
      );
    await step(Date.now()); // takes it off the active list: its retention marker is written
    const service = BlobServiceClient.fromConnectionString(env.azurite.connectionString);
    const container = app.settings.SYSTEM_CONTAINER;
    await service.getContainerClient(container).getBlobClient(keys.spec(id)).createSnapshot();
    expect(await blobsAndSnapshots(service, container, keys.jobPrefix(id))).toContain(`${keys.spec(id)}@snapshot`);

    expect(await step(Date.now() + 2 * HOUR_MS)).toMatchObject({ outcome: "completed", value: { removedJobs: 1 } });
    expect(await getJobStatus(app, id)).toBeUndefined();
    expect(await blobsAndSnapshots(service, container, keys.jobPrefix(id))).toEqual([]);
    expect(await app.system.list(keys.endedPrefix, 10)).toEqual([]);
    expect(events.filter((event) => event.type === "job-removal-failed")).toEqual([]);
  });
});
