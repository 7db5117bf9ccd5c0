import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { readSettings } from "../../src/app/settings";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { item, params, world } from "../support/coordinationWorld";
import { runOnHeap } from "../support/heapChild";
import type { MemoryFiles } from "../support/memoryPorts";

/**
 * An input blob's size is bounded (MAX_INPUT_BLOB_BYTES): a worker holds the text of a blob it processes, and every
 * work unit of its process (the leader's step, perhaps, among them) shares one heap. An item naming a larger blob fails
 * alone, with its size and the limit, before any of it is downloaded — where the whole blob was read into one string
 * and parsed into an array of every record (about 20 times its size: a 24 MiB CSV ended the process, on every
 * delivery).
 */

/** Runs inputBlobSize.child.ts on a heap of `heapMb`: `units` work units at once, each naming a blob of `mib` MiB. */
function child(heapMb: number, mib: number, units: number) {
  const { status, oom, stdout } = runOnHeap(resolve(__dirname, "inputBlobSize.child.ts"), heapMb, [mib, units]);
  return { status, oom, stdout };
}

const delivery = { id: "m1", dequeueCount: 1, maxDequeueCount: 5 };

/**
 * Counts the pieces of blob content the worker reads from `inputs`; `sizeUnknown` reports every blob's size as 0, as
 * the adapter does for a response without a content length.
 */
function countPieces(inputs: MemoryFiles, { sizeUnknown = false } = {}): { pieces: number } {
  const read = { pieces: 0 };
  const open = inputs.open.bind(inputs);
  inputs.open = async (name) => {
    const opened = await open(name);
    if (opened === undefined) return undefined;
    const { content } = opened;
    async function* counted(): AsyncGenerator<Uint8Array> {
      for await (const piece of content) {
        read.pieces++;
        yield piece;
      }
    }
    return { sizeBytes: sizeUnknown ? 0 : opened.sizeBytes, content: counted(), close: () => opened.close() };
  };
  return read;
}
const csv = { format: "csv", keyField: "k", valueField: "v" } as const;

describe("an item naming a large input blob", () => {
  it("a 24 MiB CSV blob fails its item with its size and the limit; the worker's process survives on a 256 MB heap", () => {
    expect(child(256, 24, 1)).toEqual({
      status: 0,
      oom: false,
      stdout: `limit 4194304; failed; results 1; input blob "big-0.csv" is 25165820 bytes (24 MiB); MAX_INPUT_BLOB_BYTES allows at most 4194304 bytes (4 MiB) per input blob: split it into several items`,
    });
  });

  it("24 work units at once (host.json's batch of 16 and 8 more), each naming a CSV blob at the limit, are processed on a 512 MB heap", () => {
    expect(child(512, readSettings({}).MAX_INPUT_BLOB_BYTES / (1024 * 1024), 24)).toEqual({
      status: 0,
      oom: false,
      stdout: "limit 4194304; processed; results 24",
    });
  }, 180_000);

  it("fails alone, on the first delivery, without a byte of it downloaded; the unit's other items count", async () => {
    const { deps, inputs, results } = world({ maxInputBlobBytes: 1024 });
    inputs.blobs.set("big.ndjson", Buffer.alloc(1025, " "));
    inputs.blobs.set("limit.ndjson", `${JSON.stringify({ k: "b", v: 2 })}${" ".repeat(1024 - 15)}`);
    const read = countPieces(inputs);
    const inputsOfUnit = [item("a", 1), { blob: "big.ndjson" }, { blob: "limit.ndjson" }];
    const outcome = await processWorkMessage(
      deps,
      { v: 2, jobId: "j1", first: 0, kind: "group-by", params, inputs: inputsOfUnit },
      delivery,
    );
    expect(outcome).toMatchObject({ status: "failed" });
    expect(read.pieces).toBe(1); // limit.ndjson's one piece; none of big.ndjson
    const result = JSON.parse(results.bodies()[0] ?? "{}") as { done: unknown; failed: unknown };
    expect(result.done).toEqual([
      [0, 0],
      [2, 2],
    ]);
    expect(result.failed).toEqual([
      {
        items: [[1, 1]],
        reason:
          'input blob "big.ndjson" is 1025 bytes (1 KiB); MAX_INPUT_BLOB_BYTES allows at most 1024 bytes (1 KiB) per input blob: split it into several items',
      },
    ]);
  });

  it("a blob whose size storage did not tell is cut off as soon as its content passes the limit", async () => {
    const { deps, inputs, results } = world({ maxInputBlobBytes: 100 });
    inputs.pieceBytes = 64;
    inputs.blobs.set("unsized.csv", `k,v\n${"a,1\n".repeat(1000)}`);
    const read = countPieces(inputs, { sizeUnknown: true });
    await processWorkMessage(
      deps,
      { v: 2, jobId: "j1", first: 0, kind: "group-by", params: csv, inputs: [{ blob: "unsized.csv" }] },
      delivery,
    );
    expect(read.pieces).toBe(2);
    expect(JSON.parse(results.bodies()[0] ?? "{}")).toMatchObject({
      failed: [
        {
          items: [[0, 0]],
          reason: expect.stringMatching(/^input blob "unsized.csv" is more than 100 bytes;/) as unknown,
        },
      ],
    });
  });
});
