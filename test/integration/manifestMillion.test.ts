import { describe, expect, it } from "vitest";
import { getJobStatus, runCoordinatorTick, submitJob } from "../../src/app/operations";
import { keys } from "../../src/coordination/state/jobState";
import { CHUNK_SIZE, MAX_ITEMS_PER_JOB } from "../../src/coordination/jobs/submit";
import { useAzurite } from "../support/azuriteFixture";
import { newTestApp } from "../support/inProcessApp";

const name = (item: number): string => `in/${item.toString().padStart(7, "0")}.csv`;

describe("the documented limit: a job of 1,000,000 items, submitted as a manifest (Azurite)", () => {
  const env = useAzurite();

  it(`stores and registers a manifest of MAX_ITEMS_PER_JOB (${MAX_ITEMS_PER_JOB}) items; the leader dispatches from it`, async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString, {
      DISPATCH_BATCH_SIZE: "10",
      STEP_BUDGET_MS: "20000",
    });
    const inputs = env.blobService().getContainerClient(app.settings.INPUT_CONTAINER);
    await inputs.create();
    const lines = Array.from({ length: MAX_ITEMS_PER_JOB }, (_, item) => `{"blob":"${name(item)}"}\n`).join("");
    await inputs
      .getBlockBlobClient("million.ndjson")
      .uploadData(Buffer.from(lines), { blockSize: 8 * 1024 * 1024, concurrency: 4 });

    const startedMs = Date.now();
    const submitted = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      manifest: "million.ndjson",
    });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    expect(submitted.itemCount).toBe(MAX_ITEMS_PER_JOB);
    console.info(`1,000,000-item manifest (${lines.length} bytes) stored in ${Date.now() - startedMs} ms`);
    const last = JSON.parse(
      (await app.system.readText(keys.chunk(submitted.id, MAX_ITEMS_PER_JOB / CHUNK_SIZE - 1))) ?? "[]",
    ) as unknown[];
    expect(last).toHaveLength(CHUNK_SIZE);
    expect(last.at(-1)).toEqual({ blob: name(MAX_ITEMS_PER_JOB - 1) });

    // One step registers the job and dispatches the 20 items in flight that DISPATCH_BATCH_SIZE 10 allows, in units
    // of two (the window of 20 cut into WORK_UNIT_SPREAD, 16, units); running all of it is the throughput bench's part.
    expect(await runCoordinatorTick(app, sink)).toBe("completed");
    expect(await getJobStatus(app, submitted.id)).toMatchObject({
      status: "running",
      progress: { total: MAX_ITEMS_PER_JOB, dispatched: 20, done: 0, failed: 0 },
    });
    const work = (await app.workQueue.receive(32, 30))
      .map((message) => JSON.parse(message.text ?? "{}") as { first: number })
      .sort((a, b) => a.first - b.first);
    expect(work).toEqual(
      Array.from({ length: 10 }, (_, unit): unknown =>
        expect.objectContaining({
          v: 2,
          jobId: submitted.id,
          first: 2 * unit,
          inputs: [{ blob: name(2 * unit) }, { blob: name(2 * unit + 1) }],
        }),
      ),
    );
  }, 300_000);
});
