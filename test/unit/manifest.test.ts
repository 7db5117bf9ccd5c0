import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { manifestLines, storeManifestSubmission, type ManifestLine } from "../../src/coordination/jobs/manifest";
import { keys } from "../../src/coordination/state/jobState";
import { CHUNK_SIZE, MAX_ITEMS_PER_JOB } from "../../src/coordination/jobs/submit";
import type { OpenedBlob } from "../../src/coordination/ports/ports";
import { MemoryFiles } from "../support/memoryPorts";

const PARAMS = { format: "csv", keyField: "region", valueField: "amount" };

async function* pieces(bytes: Buffer, size: number): AsyncGenerator<Uint8Array> {
  for (let start = 0; start < bytes.length; start += size) {
    await Promise.resolve();
    yield bytes.subarray(start, start + size);
  }
}

async function collect(lines: AsyncIterable<ManifestLine>): Promise<ManifestLine[]> {
  const out: ManifestLine[] = [];
  for await (const line of lines) out.push(line);
  return out;
}

function ports(manifest: string | Buffer): { system: MemoryFiles; inputs: MemoryFiles } {
  const inputs = new MemoryFiles();
  inputs.blobs.set("m.ndjson", manifest);
  return { system: new MemoryFiles(), inputs };
}

describe("manifest lines", () => {
  it("splits LF and CRLF lines however the bytes arrive, numbering blank lines too, with multi-byte characters split between pieces", async () => {
    const bytes = Buffer.from('\uFEFF{"inline":"é€"}\r\n\n{"blob":"a/ü.csv"}\r\nlast', "utf8");
    const expected = [
      { line: 1, text: '{"inline":"é€"}' },
      { line: 2, text: "" },
      { line: 3, text: '{"blob":"a/ü.csv"}' },
      { line: 4, text: "last" },
    ];
    for (const size of [1, 2, 3, 5, 7, bytes.length])
      expect(await collect(manifestLines(pieces(bytes, size))), `pieces of ${size}`).toEqual(expected);
  });

  it("reports a line longer than the limit without holding it, and goes on with the next line", async () => {
    const bytes = Buffer.from(`${"x".repeat(25)}\nshort\n${"y".repeat(11)}`, "utf8");
    expect(await collect(manifestLines(pieces(bytes, 4), 10))).toEqual([
      { line: 1, error: "longer than 10 bytes" },
      { line: 2, text: "short" },
      { line: 3, error: "longer than 10 bytes" },
    ]);
  });
});

describe("storing a manifest submission (in-memory ports)", () => {
  it(`stores a job of MAX_ITEMS_PER_JOB (${MAX_ITEMS_PER_JOB}) lines, and refuses one line more naming that line, storing nothing`, async () => {
    const line = '{"inline":"region,amount\\neu,1\\n"}\n';
    const atLimit = ports(Buffer.from(line.repeat(MAX_ITEMS_PER_JOB)));
    const stored = await storeManifestSubmission(atLimit, { kind: "group-by", params: PARAMS, manifest: "m.ndjson" });
    expect(stored).toMatchObject({ ok: true, itemCount: MAX_ITEMS_PER_JOB });
    expect(atLimit.system.blobs.size).toBe(MAX_ITEMS_PER_JOB / CHUNK_SIZE + 2); // chunks, spec, inbox marker

    const over = ports(Buffer.from(line.repeat(MAX_ITEMS_PER_JOB + 1)));
    expect(await storeManifestSubmission(over, { kind: "group-by", params: PARAMS, manifest: "m.ndjson" })).toEqual({
      ok: false,
      errors: [
        {
          field: "manifest",
          message: `line ${MAX_ITEMS_PER_JOB + 1}: more than ${MAX_ITEMS_PER_JOB} items; a job may have at most ${MAX_ITEMS_PER_JOB}`,
        },
      ],
    });
    expect(over.system.blobs.size).toBe(0);
  }, 120_000);

  it("keeps the order of the lines in the chunks (item i is the i-th item line)", async () => {
    const lines = Array.from({ length: 2 * CHUNK_SIZE + 3 }, (_, i) => JSON.stringify({ blob: `in/${i}.csv` }));
    const files = ports(lines.join("\n\n"));
    const stored = await storeManifestSubmission(files, { kind: "group-by", params: PARAMS, manifest: "m.ndjson" });
    if (!stored.ok) throw new Error(JSON.stringify(stored.errors));
    const chunk2 = JSON.parse((await files.system.readText(keys.chunk(stored.id, 2))) ?? "[]") as unknown[];
    expect(chunk2).toEqual([
      { blob: `in/${2 * CHUNK_SIZE}.csv` },
      { blob: `in/${2 * CHUNK_SIZE + 1}.csv` },
      { blob: `in/${2 * CHUNK_SIZE + 2}.csv` },
    ]);
    expect(JSON.parse((await files.system.readText(keys.spec(stored.id))) ?? "{}")).toMatchObject({
      itemCount: 2 * CHUNK_SIZE + 3,
      chunkSize: CHUNK_SIZE,
    });
  });

  it("a chunk write that fails while the manifest is still arriving rejects the submission with that error, leaves no rejection unhandled and no chunk behind", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => {
      unhandled.push(reason);
    };
    process.on("unhandledRejection", onUnhandled);
    try {
      const { system, inputs } = ports("");
      const write = system.writeText.bind(system);
      // Chunks 0 and 1 are stored; every later write fails as storage does, a little later (a 503 after a round trip).
      system.writeText = async (name: string, text: string) => {
        await sleep(5);
        if (name.endsWith("/items/0.json") || name.endsWith("/items/1.json")) return write(name, text);
        throw new Error(`storage answered 503 writing ${name}`);
      };
      const lines = Buffer.from(
        Array.from({ length: 6 * CHUNK_SIZE }, (_, i) => JSON.stringify({ inline: `region,amount\neu,${i}` })).join(
          "\n",
        ),
      );
      // The manifest arrives over the network: the writes of earlier chunks settle while later lines are read.
      inputs.open = (): Promise<OpenedBlob> =>
        Promise.resolve({
          sizeBytes: lines.length,
          close: () => undefined,
          content: (async function* () {
            for (let start = 0; start < lines.length; start += 4096) {
              await sleep(2);
              yield lines.subarray(start, start + 4096);
            }
          })(),
        });
      const outcome = await storeManifestSubmission(
        { system, inputs },
        { kind: "group-by", params: PARAMS, manifest: "m.ndjson" },
      ).then(
        () => "resolved",
        (error: unknown) => `rejected: ${error instanceof Error ? error.message : String(error)}`,
      );
      await sleep(50); // any write still in flight settles
      expect({ outcome, unhandled: unhandled.map(String), stored: [...system.blobs.keys()] }).toEqual({
        outcome: expect.stringMatching(/^rejected: storage answered 503 writing jobs\/.*\/items\/2\.json$/) as unknown,
        unhandled: [],
        stored: [],
      });
    } finally {
      process.off("unhandledRejection", onUnhandled);
    }
  });

  it("reports at most 20 bad lines, then says it stopped", async () => {
    const result = await storeManifestSubmission(ports("nope\n".repeat(30)), {
      kind: "group-by",
      params: PARAMS,
      manifest: "m.ndjson",
    });
    expect(result.ok).toBe(false);
    const messages = result.ok ? [] : result.errors.map((error) => error.message);
    expect(messages).toHaveLength(21);
    expect(messages[19]).toMatch(/^line 20: not valid JSON/);
    expect(messages[20]).toBe("stopped reading after 20 bad lines");
  });
});
