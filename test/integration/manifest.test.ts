import type { ContainerClient } from "@azure/storage-blob";
import { describe, expect, it } from "vitest";
import { getJobStatus, submitJob } from "../../src/app/operations";
import { MAX_MANIFEST_BYTES } from "../../src/coordination/jobs/manifest";
import { useAzurite } from "../support/azuriteFixture";
import { newTestApp, runUntilComplete } from "../support/inProcessApp";

const PARAMS = { format: "csv", keyField: "region", valueField: "amount" };

async function upload(container: ContainerClient, name: string, content: string | Buffer): Promise<void> {
  await container.createIfNotExists();
  const data = typeof content === "string" ? Buffer.from(content, "utf8") : content;
  await container.getBlockBlobClient(name).uploadData(data);
}

async function blobNames(container: ContainerClient): Promise<string[]> {
  const names: string[] = [];
  if (!(await container.exists())) return names;
  for await (const blob of container.listBlobsFlat()) names.push(blob.name);
  return names;
}

describe("submissions naming their items in an NDJSON manifest in the input container (Azurite)", () => {
  const env = useAzurite();

  it("runs every line of the manifest as one item (inline and blob; CRLF, a BOM and blank lines are fine); the manifest is untouched", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString, { DISPATCH_BATCH_SIZE: "3" });
    const inputs = env.blobService().getContainerClient(app.settings.INPUT_CONTAINER);
    await upload(inputs, "data/a.csv", "region,amount\neu,10\nus,1\n");
    const lines = [
      '{"blob":"data/a.csv"}',
      "",
      ...Array.from({ length: 7 }, (_, i) => JSON.stringify({ inline: `region,amount\neu,${i}\n` })),
      '{"blob":"data/missing.csv"}',
    ];
    const manifest = `\uFEFF${lines.join("\r\n")}\r\n\r\n`;
    await upload(inputs, "manifests/job.ndjson", manifest);
    const etag = (await inputs.getBlobClient("manifests/job.ndjson").getProperties()).etag;

    const submitted = await submitJob(app, { kind: "group-by", params: PARAMS, manifest: "manifests/job.ndjson" });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    expect(submitted.itemCount).toBe(9);
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, submitted.id))?.status === "completed");

    expect(await getJobStatus(app, submitted.id)).toMatchObject({
      progress: { total: 9, done: 8, failed: 1 },
      failures: [{ item: 8, reason: 'input blob "data/missing.csv" does not exist' }],
      aggregate: { eu: { count: 8, sum: 10 + 21 }, us: { count: 1, sum: 1 } },
    });
    expect((await inputs.getBlobClient("manifests/job.ndjson").getProperties()).etag).toBe(etag);
    expect(await blobNames(inputs)).toEqual(["data/a.csv", "manifests/job.ndjson"]);
  });

  it("refuses a manifest with bad lines, naming each line and what is wrong, and stores nothing", async () => {
    const { app } = newTestApp(env.azurite.connectionString);
    const inputs = env.blobService().getContainerClient(app.settings.INPUT_CONTAINER);
    const system = env.blobService().getContainerClient(app.settings.SYSTEM_CONTAINER);
    // 2,500 good lines first, so that chunks of the job were already written when the bad lines come.
    const good = Array.from({ length: 2500 }, (_, i) => JSON.stringify({ inline: `region,amount\neu,${i}\n` }));
    const bad = [
      '{"inline": "region,amount\\neu,1\\n"',
      '{"text":"x"}',
      JSON.stringify({ inline: "x".repeat(41_000) }),
      '{"blob":"dir/"}',
      "[1,2]",
    ];
    const invalidUtf8 = Buffer.from([0xc3, 0x28, 0x0a]);
    await upload(
      inputs,
      "bad.ndjson",
      Buffer.concat([Buffer.from([...good, ...bad].join("\n") + "\n", "utf8"), invalidUtf8]),
    );

    const result = await submitJob(app, { kind: "group-by", params: PARAMS, manifest: "bad.ndjson" });
    expect(result.ok).toBe(false);
    expect(result.ok ? [] : result.errors).toEqual([
      { field: "manifest", message: expect.stringMatching(/^line 2501: not valid JSON/) as unknown },
      { field: "manifest", message: 'line 2502: must be {"inline": "…"} or {"blob": "name in the input container"}' },
      {
        field: "manifest",
        message: expect.stringMatching(
          /^line 2503: inline: the item is 41013 bytes as JSON, .*; at most 40960/,
        ) as unknown,
      },
      { field: "manifest", message: expect.stringMatching(/^line 2504: blob: must be a blob name/) as unknown },
      { field: "manifest", message: 'line 2505: must be {"inline": "…"} or {"blob": "name in the input container"}' },
      { field: "manifest", message: "line 2506: not valid UTF-8" },
    ]);
    expect(await blobNames(system)).toEqual([]);
  });

  it("refuses a manifest that does not exist, or a submission with both items and a manifest", async () => {
    const { app } = newTestApp(env.azurite.connectionString);
    expect(await submitJob(app, { kind: "group-by", params: PARAMS, manifest: "nope.ndjson" })).toEqual({
      ok: false,
      errors: [{ field: "manifest", message: 'blob "nope.ndjson" does not exist in the input container' }],
    });
    const both = await submitJob(app, {
      kind: "group-by",
      params: PARAMS,
      manifest: "nope.ndjson",
      items: [{ inline: "region,amount\neu,1\n" }],
    });
    expect(both).toMatchObject({
      ok: false,
      errors: [
        { field: "manifest", message: expect.stringMatching(/exactly one of "items" .* or "manifest"/) as unknown },
      ],
    });
    const empty = env.blobService().getContainerClient(app.settings.INPUT_CONTAINER);
    await upload(empty, "empty.ndjson", "\n\n");
    expect(await submitJob(app, { kind: "group-by", params: PARAMS, manifest: "empty.ndjson" })).toEqual({
      ok: false,
      errors: [{ field: "manifest", message: "the manifest has no items; a job needs at least one item" }],
    });
  });

  it(`refuses a manifest over MAX_MANIFEST_BYTES (${MAX_MANIFEST_BYTES / 1024 / 1024} MiB) with its size and the limit, before reading it`, async () => {
    const { app } = newTestApp(env.azurite.connectionString);
    const inputs = env.blobService().getContainerClient(app.settings.INPUT_CONTAINER);
    const line = Buffer.from(`${JSON.stringify({ inline: "region,amount\neu,1\n" })}\n`);
    const content = Buffer.alloc(MAX_MANIFEST_BYTES + 1, line);
    await upload(inputs, "huge.ndjson", content);
    const result = await submitJob(app, { kind: "group-by", params: PARAMS, manifest: "huge.ndjson" });
    expect(result).toEqual({
      ok: false,
      errors: [
        {
          field: "manifest",
          message: `blob "huge.ndjson" is ${MAX_MANIFEST_BYTES + 1} bytes; a manifest may have at most ${MAX_MANIFEST_BYTES} bytes (128 MiB)`,
        },
      ],
    });
    expect(await blobNames(env.blobService().getContainerClient(app.settings.SYSTEM_CONTAINER))).toEqual([]);
  });
});
