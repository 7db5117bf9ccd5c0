import { createHash } from "node:crypto";
import type { ContainerClient } from "@azure/storage-blob";
import { describe, expect, it } from "vitest";
import { getJobStatus, runCoordinatorTick, submitJob } from "../../src/app/operations";
import { ConfigurationError } from "../../src/library/errors";
import { uniqueName, useAzurite } from "../support/azuriteFixture";
import { newTestApp, runUntilComplete } from "../support/inProcessApp";

const PARAMS = { format: "csv", keyField: "region", valueField: "amount" };

/** User blobs named like the app's own files once were (inbox markers, job specs, chunks, partials). */
const LOOKALIKES = [
  "inbox/x.csv",
  "inbox/00000000-0000-4000-8000-000000000000",
  "jobs/y.csv",
  "jobs/abc/spec.json",
  "jobs/abc/items/0.json",
  "jobs/abc/partials/0.json",
  "sales/2026/a.csv",
];

/** Name → ETag, MD5 of the content and the content itself, of every blob in the container. */
async function snapshot(
  container: ContainerClient,
): Promise<Map<string, { etag: string | undefined; md5: string; text: string }>> {
  const out = new Map<string, { etag: string | undefined; md5: string; text: string }>();
  for await (const blob of container.listBlobsFlat()) {
    const content = await container.getBlobClient(blob.name).downloadToBuffer();
    out.set(blob.name, {
      etag: blob.properties.etag,
      md5: createHash("md5").update(content).digest("base64"),
      text: content.toString("utf8"),
    });
  }
  return out;
}

describe("the app never writes, creates or deletes anything in the input container (Azurite)", () => {
  const env = useAzurite();

  it("user blobs named inbox/…, jobs/… are byte-for-byte unchanged after jobs run, including a job whose items are those blobs", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString);
    const inputs = env.blobService().getContainerClient(app.settings.INPUT_CONTAINER);
    await inputs.create();
    for (const [index, name] of LOOKALIKES.entries()) {
      const text = `region,amount\neu,${index + 1}\n`;
      await inputs.getBlockBlobClient(name).upload(text, Buffer.byteLength(text));
    }
    const before = await snapshot(inputs);
    expect([...before.keys()].sort()).toEqual([...LOOKALIKES].sort());

    const onBlobs = await submitJob(app, {
      kind: "group-by",
      params: PARAMS,
      items: LOOKALIKES.map((blob) => ({ blob })),
    });
    const inline = await submitJob(app, {
      kind: "group-by",
      params: PARAMS,
      items: [{ inline: "region,amount\nus,5\n" }, { inline: "region,amount\nus,7\n" }],
    });
    if (!onBlobs.ok || !inline.ok) throw new Error("submission refused");
    const completed = async (id: string): Promise<boolean> => (await getJobStatus(app, id))?.status === "completed";
    await runUntilComplete(app, sink, async () => (await completed(onBlobs.id)) && (await completed(inline.id)));

    expect(await snapshot(inputs)).toEqual(before);
    const n = LOOKALIKES.length;
    expect(await getJobStatus(app, onBlobs.id)).toMatchObject({
      status: "completed",
      progress: { total: n, done: n, failed: 0 },
      aggregate: { eu: { count: n, sum: (n * (n + 1)) / 2 } },
    });
    expect(await getJobStatus(app, inline.id)).toMatchObject({
      status: "completed",
      progress: { done: 2, failed: 0 },
      aggregate: { us: { count: 2, sum: 12 } },
    });
  });

  it("an item names a blob in the input container only: another job's spec and chunks are not inputs", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString);
    await env.blobService().getContainerClient(app.settings.INPUT_CONTAINER).create();
    const victim = await submitJob(app, {
      kind: "group-by",
      params: PARAMS,
      items: [{ inline: "region,amount\neu,1\n" }],
    });
    if (!victim.ok) throw new Error("submission refused");
    const prying = await submitJob(app, {
      kind: "group-by",
      params: { format: "ndjson", keyField: "kind", valueField: "itemCount" },
      items: [{ blob: `jobs/${victim.id}/spec.json` }, { blob: `jobs/${victim.id}/items/0.json` }],
    });
    if (!prying.ok) throw new Error("submission refused");
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, prying.id))?.status === "completed");
    const status = await getJobStatus(app, prying.id);
    expect(status?.progress).toMatchObject({ done: 0, failed: 2 });
    // Each item in a unit of its own (a 2-item job is cut into WORK_UNIT_SPREAD units): they fold in any order.
    expect(status?.failures.map((failure) => failure.reason).sort()).toEqual([
      `input blob "jobs/${victim.id}/items/0.json" does not exist`,
      `input blob "jobs/${victim.id}/spec.json" does not exist`,
    ]);
  });

  it("refuses to start with SYSTEM_CONTAINER set to the input container: the user's inbox/… and cancel/… blobs stay", async () => {
    const input = uniqueName("in");
    const container = env.blobService().getContainerClient(input);
    await container.create();
    for (const name of ["inbox/notes.csv", "cancel/readme.txt"])
      await container.getBlockBlobClient(name).upload("region,amount\neu,1\n", 19);
    const before = await snapshot(container);
    let refusal: unknown;
    try {
      // What a tick did with these settings before they were refused: it took the user's blobs for inbox markers and
      // cancellation requests, found no job for them, and deleted them.
      const { app, sink } = newTestApp(env.azurite.connectionString, {
        INPUT_CONTAINER: input,
        SYSTEM_CONTAINER: input,
      });
      await submitJob(
        app,
        { kind: "group-by", params: PARAMS, items: [{ inline: "region,amount\neu,1" }] },
        { wake: false },
      );
      await runCoordinatorTick(app, sink);
    } catch (error) {
      refusal = error;
    }
    expect(await snapshot(container)).toEqual(before);
    expect(refusal).toBeInstanceOf(ConfigurationError);
    expect(String(refusal)).toContain(`SYSTEM_CONTAINER="${input}" is also INPUT_CONTAINER`);
  });

  it("submitting and running a job creates no input container when there is none", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString);
    const submitted = await submitJob(app, {
      kind: "group-by",
      params: PARAMS,
      items: [{ inline: "region,amount\neu,2\n" }, { blob: "missing.csv" }],
    });
    if (!submitted.ok) throw new Error("submission refused");
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, submitted.id))?.status === "completed");
    expect(await getJobStatus(app, submitted.id)).toMatchObject({
      progress: { done: 1, failed: 1 },
      failures: [{ item: 1, reason: 'input blob "missing.csv" does not exist' }],
    });
    expect(await env.blobService().getContainerClient(app.settings.INPUT_CONTAINER).exists()).toBe(false);
  });
});
