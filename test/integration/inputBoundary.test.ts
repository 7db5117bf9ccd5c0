import { BlobServiceClient, type ContainerClient } from "@azure/storage-blob";
import { describe, expect, it } from "vitest";
import { getJobStatus, runCoordinatorTick, submitJob } from "../../src/app/operations";
import { BlobFilesStore, ReadOnlyBlobFiles } from "../../src/azure/BlobFilesStore";
import { BlobLeaseStore } from "../../src/azure/BlobLeaseStore";
import { BlobStateStore } from "../../src/azure/BlobStateStore";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ConfigurationError } from "../../src/library/errors";
import { uniqueName, useAzurite } from "../support/azuriteFixture";
import { drainWorkQueue, newTestApp, runUntilComplete } from "../support/inProcessApp";

/**
 * An item names a blob in the input container only (docs/reference/storage.md, "Where"). The storage SDK puts a blob
 * name into the URL's path, and URL parsing resolves "." and ".." segments there, so "../other/x" addresses blob x of
 * container "other". Submissions refuse such names, and the blob adapters refuse any name that would leave their
 * container.
 */
describe("blob names cannot leave their container (Azurite)", () => {
  const env = useAzurite();
  const DOT_SEGMENTS = /blob names may not contain "\." or "\.\." segments/;

  /** A container holding one blob, "a.csv", whose content must never be read or changed through another container. */
  async function victim(): Promise<{ name: string; container: ContainerClient }> {
    const name = uniqueName("victim");
    const container = env.blobService().getContainerClient(name);
    await container.create();
    await container.getBlockBlobClient("a.csv").upload("secret", 6);
    return { name, container };
  }

  async function emptyContainer(): Promise<ContainerClient> {
    const container = env.blobService().getContainerClient(uniqueName("in"));
    await container.create();
    return container;
  }

  const params = { format: "csv", keyField: "customer", valueField: "salary" };

  /** An app (its input container created) with one completed job, whose aggregate names alice and her salary. */
  async function appWithVictimJob(): Promise<ReturnType<typeof newTestApp> & { victimId: string }> {
    const test = newTestApp(env.azurite.connectionString);
    const { app, sink } = test;
    await env.blobService().getContainerClient(app.settings.INPUT_CONTAINER).create();
    const job = await submitJob(app, {
      kind: "group-by",
      params,
      items: [{ inline: "customer,salary\nalice,123456" }],
    });
    if (!job.ok) throw new Error(JSON.stringify(job.errors));
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, job.id))?.status === "completed");
    return { ...test, victimId: job.id };
  }

  const escaping = (v: string): string[] => [
    `../${v}/a.csv`,
    `./../${v}/a.csv`,
    `x/../../${v}/a.csv`,
    `..\\${v}\\a.csv`,
    `x\\..\\..\\${v}\\a.csv`,
    "..",
    "x/..",
  ];

  it("the input port refuses every name with a dot segment (also between backslashes), naming the rule", async () => {
    const { name: v } = await victim();
    const inputs = new ReadOnlyBlobFiles(await emptyContainer());
    for (const name of escaping(v)) {
      await expect(inputs.readText(name), name).rejects.toThrow(ConfigurationError);
      await expect(inputs.readText(name), name).rejects.toThrow(DOT_SEGMENTS);
      await expect(inputs.open(name), name).rejects.toThrow(DOT_SEGMENTS);
    }
  });

  it("percent-encoded dots stay part of the name: %2e%2e addresses a blob of that name in the container, not another container", async () => {
    const { name: v } = await victim();
    const container = await emptyContainer();
    const inputs = new ReadOnlyBlobFiles(container);
    for (const name of [`%2e%2e/${v}/a.csv`, `%2E%2E/${v}/a.csv`, `.%2e/${v}/a.csv`])
      expect(await inputs.readText(name), name).toBeUndefined();
    await container.getBlockBlobClient(`%2e%2e/${v}/a.csv`).upload("mine", 4);
    expect(await inputs.readText(`%2e%2e/${v}/a.csv`)).toBe("mine");
  });

  it("the system port neither reads, writes nor deletes outside its container", async () => {
    const { name: v, container: other } = await victim();
    const system = new BlobFilesStore(await emptyContainer());
    for (const name of [`inbox/../../${v}/a.csv`, `jobs/..\\..\\${v}\\a.csv`]) {
      await expect(system.delete(name), name).rejects.toThrow(DOT_SEGMENTS);
      await expect(system.writeText(name, "overwritten"), name).rejects.toThrow(DOT_SEGMENTS);
      await expect(system.readText(name), name).rejects.toThrow(DOT_SEGMENTS);
    }
    expect((await other.getBlobClient("a.csv").downloadToBuffer()).toString()).toBe("secret");
  });

  it("the state port neither reads nor writes state outside its container", async () => {
    const { name: v, container: other } = await victim();
    const state = new BlobStateStore(env.blobService(), uniqueName("state"));
    await expect(state.read(`../${v}/a.csv`)).rejects.toThrow(DOT_SEGMENTS);
    await expect(state.write(`jobs/../../${v}/b.json`, { x: 1 }, 1, { ifNoneMatch: "*" })).rejects.toThrow(
      DOT_SEGMENTS,
    );
    expect(await other.getBlobClient("b.json").exists()).toBe(false);
    expect((await other.getBlobClient("a.csv").downloadToBuffer()).toString()).toBe("secret");
  });

  it("the lease store refuses a lease blob name with a dot segment", () => {
    const service = BlobServiceClient.fromConnectionString(env.azurite.connectionString);
    expect(() => new BlobLeaseStore(service, { blobName: "../coordinator-state/index.json" })).toThrow(
      ConfigurationError,
    );
    expect(() => new BlobLeaseStore(service, { blobName: "a/./lease" })).toThrow(DOT_SEGMENTS);
  });

  it("a submission naming a blob with a dot segment is refused, naming each item, the manifest and manifest line", async () => {
    const { app, victimId } = await appWithVictimJob();
    const inputs = env.blobService().getContainerClient(app.settings.INPUT_CONTAINER);

    // The review's case: the other job's state (its aggregate) in the state container, read as an NDJSON input.
    const prying = await submitJob(app, {
      kind: "group-by",
      params: { format: "ndjson", keyField: "id", valueField: "aggregate" },
      items: [
        { blob: `../${app.settings.STATE_CONTAINER}/jobs/${victimId}.json` },
        { blob: "sales/./a.csv" },
        { blob: "sales/2026/a.csv" },
      ],
    });
    expect(prying).toEqual({
      ok: false,
      errors: [
        { field: "items.0.blob", message: expect.stringMatching(DOT_SEGMENTS) as unknown },
        { field: "items.1.blob", message: expect.stringMatching(DOT_SEGMENTS) as unknown },
      ],
    });
    const manifest = await submitJob(app, { kind: "group-by", params, manifest: "../manifests/m.ndjson" });
    expect(manifest).toEqual({
      ok: false,
      errors: [{ field: "manifest", message: expect.stringMatching(DOT_SEGMENTS) as unknown }],
    });
    const line = JSON.stringify({ blob: `../${app.settings.STATE_CONTAINER}/index.json` });
    await inputs.getBlockBlobClient("m.ndjson").upload(line, line.length);
    const lines = await submitJob(app, { kind: "group-by", params, manifest: "m.ndjson" });
    expect(lines).toEqual({
      ok: false,
      errors: [
        { field: "manifest", message: expect.stringMatching(/^line 1: blob: blob names may not contain/) as unknown },
      ],
    });
  });

  it("a job stored before names were checked: its item with a dot segment fails with the reason, nothing leaks, the other items count", async () => {
    const { app, sink, victimId } = await appWithVictimJob();
    // Stored as a version before this check stored it: straight into the system container, past validation.
    const stored = await storeSubmission(app.system, {
      kind: "group-by",
      params: { format: "ndjson", keyField: "id", valueField: "aggregate" },
      items: [
        { blob: `../${app.settings.STATE_CONTAINER}/jobs/${victimId}.json` },
        { inline: '{"id":"x","aggregate":1}' },
      ],
    });
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, stored.id))?.status === "completed");
    const status = await getJobStatus(app, stored.id);
    expect(status?.progress).toMatchObject({ done: 1, failed: 1 });
    expect(status?.failures).toEqual([{ item: 0, reason: expect.stringMatching(DOT_SEGMENTS) as unknown }]);
    expect(JSON.stringify(status)).not.toContain("alice");
  });
});

/**
 * An inline item travels JSON-escaped in a work message, base64-encoded in a queue message of at most 64 KiB (Azurite
 * answers 413 RequestBodyTooLarge beyond). A submission counts the item as it will be sent.
 */
describe("inline items and the queue's message limit (Azurite)", () => {
  const env = useAzurite();
  const params = { format: "csv", keyField: "region", valueField: "amount" } as const;

  /** Quoted CSV, as spreadsheets export it: 32 KiB of it is about 48 KB as JSON (each quote escaped). */
  function quotedCsv(maxBytes: number): string {
    const lines = ['"region","amount"'];
    for (let i = 0; lines.join("\n").length + 12 <= maxBytes; i++) lines.push(`"r${i % 7}","${i % 100}"`);
    return lines.join("\n");
  }

  it("a valid item of 32 KiB whose JSON form is over the limit is refused at submission, saying the limit; nothing is stored, and the next job runs", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString);
    const big = quotedCsv(32 * 1024);
    expect(Buffer.byteLength(big)).toBeLessThanOrEqual(32 * 1024);
    const bad = await submitJob(app, { kind: "group-by", params, items: [{ inline: big }] }, { wake: false });
    const ok = await submitJob(app, { kind: "group-by", params, items: [{ inline: "region,amount\neu,1" }] });
    if (!ok.ok) throw new Error(JSON.stringify(ok.errors));
    const errors: string[] = [];
    for (let round = 0; round < 4; round++) {
      try {
        await runCoordinatorTick(app, sink);
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error));
      }
      while ((await drainWorkQueue(app, sink)) > 0) {
        // drain
      }
    }
    expect({ bad, errors, ok: (await getJobStatus(app, ok.id))?.status }).toEqual({
      bad: {
        ok: false,
        errors: [
          {
            field: "items.0.inline",
            message: expect.stringMatching(
              /^the item is \d+ bytes as JSON, .*; at most 40960 are allowed so that its work message fits a 64 KiB queue message/,
            ) as unknown,
          },
        ],
      },
      errors: [],
      ok: "completed",
    });
    const system = env.blobService().getContainerClient(app.settings.SYSTEM_CONTAINER);
    const stored: string[] = [];
    for await (const blob of system.listBlobsFlat()) if (!blob.name.includes(ok.id)) stored.push(blob.name);
    expect(stored).toEqual([]);
  });

  it("an item of exactly the limit as JSON, escapes and all, with the widest params group-by takes, goes out in one work message and is done", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString);
    const keyField = "k".repeat(256);
    const wide = { format: "csv", keyField, valueField: "v".repeat(256) } as const;
    // Padded with rows whose keys stay within MAX_GROUP_KEY_LENGTH, the last one sized to land on the limit exactly.
    const asJson = (text: string): number => Buffer.byteLength(JSON.stringify({ inline: text }));
    const pad = `"${"x".repeat(1000)}","2"`;
    let rows = `"${keyField}","${"v".repeat(256)}"\n"a\tb","1"`;
    while (asJson(`${rows}\n${pad}\n"","2"`) < 40 * 1024) rows = `${rows}\n${pad}`;
    const inline = `${rows}\n"${"y".repeat(40 * 1024 - asJson(`${rows}\n"","2"`))}","2"`;
    expect(Buffer.byteLength(JSON.stringify({ inline }))).toBe(40 * 1024);
    const job = await submitJob(app, { kind: "group-by", params: wide, items: [{ inline }, { inline }] });
    if (!job.ok) throw new Error(JSON.stringify(job.errors));
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, job.id))?.status === "completed");
    expect((await getJobStatus(app, job.id))?.progress).toMatchObject({ done: 2, failed: 0 });
  });
});
