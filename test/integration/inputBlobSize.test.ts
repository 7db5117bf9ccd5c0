import { describe, expect, it } from "vitest";
import { getJobStatus, submitJob } from "../../src/app/operations";
import { useAzurite } from "../support/azuriteFixture";
import { newTestApp, runUntilComplete } from "../support/inProcessApp";

describe("input blobs larger than MAX_INPUT_BLOB_BYTES (Azurite)", () => {
  const env = useAzurite();

  it("an item naming a larger blob fails alone with its size and the limit; one of exactly the limit is done", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString, { MAX_INPUT_BLOB_BYTES: "1024" });
    const container = env.blobService().getContainerClient(app.settings.INPUT_CONTAINER);
    await container.create();
    const exactly = `region,amount\neu,2\n${" ".repeat(1024 - 19)}`; // trailing blanks: an empty last record
    const larger = `region,amount\n${"us,1\n".repeat(400)}`;
    await container.getBlockBlobClient("sales/exactly.csv").upload(exactly, Buffer.byteLength(exactly));
    await container.getBlockBlobClient("sales/larger.csv").upload(larger, Buffer.byteLength(larger));
    const submitted = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items: [{ blob: "sales/exactly.csv" }, { blob: "sales/larger.csv" }, { inline: "region,amount\neu,3" }],
    });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, submitted.id))?.status === "completed");
    const status = await getJobStatus(app, submitted.id);
    expect(status).toMatchObject({
      progress: { total: 3, done: 2, failed: 1 },
      aggregate: { eu: { count: 2, sum: 5 } },
      failures: [
        {
          item: 1,
          reason: `input blob "sales/larger.csv" is ${Buffer.byteLength(larger)} bytes (1.97 KiB); MAX_INPUT_BLOB_BYTES allows at most 1024 bytes (1 KiB) per input blob: split it into several items`,
        },
      ],
    });
  });
});
