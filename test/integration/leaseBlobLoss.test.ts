import { describe, expect, it } from "vitest";
import { getJobStatus, runCoordinatorTick, submitJob } from "../../src/app/operations";
import { delay } from "../../src/library/util/delay";
import { useAzurite } from "../support/azuriteFixture";
import { drainWorkQueue, newTestApp, runUntilComplete } from "../support/inProcessApp";

describe("losing the lease blob mid-job (Azurite)", () => {
  const env = useAzurite();

  it("the job still completes, and the first term after the loss has an epoch above every stored one", async () => {
    const { app, sink, events } = newTestApp(env.azurite.connectionString, { DISPATCH_BATCH_SIZE: "3" });
    const items = Array.from({ length: 15 }, (_, i) => ({ inline: `region,amount\neu,${i}` }));
    const submitted = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items,
    });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    for (let round = 0; round < 3; round++) {
      expect(await runCoordinatorTick(app, sink)).toBe("completed");
      await drainWorkQueue(app, sink);
    }
    const service = env.blobService();
    let highestStored = 0;
    for await (const blob of service
      .getContainerClient(app.settings.STATE_CONTAINER)
      .listBlobsFlat({ includeMetadata: true })) {
      highestStored = Math.max(highestStored, Number(blob.metadata?.epoch ?? 0));
    }
    expect(highestStored).toBeGreaterThanOrEqual(3);
    // the lease blob, its record and its epoch are gone
    await service.getContainerClient(app.settings.LEASE_CONTAINER).delete();

    expect(await runCoordinatorTick(app, sink)).toBe("completed"); // not fenced out by the stored epochs
    const started = events.filter((event) => event.type === "step-started").at(-1);
    expect(started?.epoch).toBeGreaterThan(highestStored);
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, submitted.id))?.status === "completed", 10);
    expect(await getJobStatus(app, submitted.id)).toMatchObject({
      status: "completed",
      progress: { total: 15, done: 15, failed: 0 },
    });
  });

  it("a lease container deleted during a step ends that term ('lost'), and the next term's epoch is above every stored one", async () => {
    const { app, sink, events } = newTestApp(env.azurite.connectionString, {
      DISPATCH_BATCH_SIZE: "3",
      STEP_BUDGET_MS: "8000",
      LEASE_RENEW_INTERVAL_MS: "500",
    });
    const items = Array.from({ length: 9 }, (_, i) => ({ inline: `region,amount\neu,${i}` }));
    const submitted = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items,
    });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    const tick = runCoordinatorTick(app, sink); // registers and dispatches, then waits on workers for up to 8 s
    while (!events.some((event) => event.type === "step-started")) await delay(50);
    await delay(500);
    await env.blobService().getContainerClient(app.settings.LEASE_CONTAINER).delete();
    expect(await tick).toBe("aborted");
    expect(events.find((event) => event.type === "step-aborted")).toMatchObject({ reason: "lost", epoch: 1 });
    await drainWorkQueue(app, sink);
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, submitted.id))?.status === "completed", 10);
    const epochs = events.flatMap((event) => (event.type === "step-started" ? [event.epoch] : []));
    expect(epochs[1]).toBeGreaterThan(1); // the record restarted at 0; the floor (terms.json, epoch 1) lifted it
    expect(await getJobStatus(app, submitted.id)).toMatchObject({
      status: "completed",
      progress: { total: 9, done: 9, failed: 0 },
    });
  });
});
