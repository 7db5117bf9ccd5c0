// Run by inputBlobSize.test.ts in a child process with a small heap: a worker handles `units` work units at once,
// each of one item naming its own input blob of `megabytes` MiB of CSV (kept in Buffers, off the V8 heap, as storage
// would hold them), and prints how each ended.
import { readSettings } from "../../src/app/settings";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { world } from "../support/coordinationWorld";

async function main(): Promise<void> {
  const megabytes = Number(process.argv[2] ?? "24");
  const units = Number(process.argv[3] ?? "1");
  const { deps, results, inputs } = world();
  const bytes = Math.round(megabytes * 1024 * 1024);
  for (let unit = 0; unit < units; unit++) {
    const body = Buffer.alloc(bytes - (bytes % 5), "a1,1\n"); // whole records of 5 bytes
    body.write("k,v\n\n", 0);
    inputs.blobs.set(`big-${unit}.csv`, body);
  }
  const params = { format: "csv", keyField: "k", valueField: "v" };
  const outcomes = await Promise.all(
    Array.from({ length: units }, (_, unit) =>
      processWorkMessage(
        deps,
        { v: 2, jobId: "job-1", first: unit, kind: "group-by", params, inputs: [{ blob: `big-${unit}.csv` }] },
        { id: `m${unit}`, dequeueCount: 1, maxDequeueCount: 5 },
      ).catch((error: unknown) => ({ status: `threw: ${error instanceof Error ? error.message : String(error)}` })),
    ),
  );
  const statuses = [...new Set(outcomes.map((outcome) => outcome.status))].join(", ");
  const reasons = [...new Set(outcomes.flatMap((outcome) => ("reason" in outcome ? [outcome.reason] : [])))];
  process.stdout.write(
    `limit ${readSettings({}).MAX_INPUT_BLOB_BYTES}; ${statuses}; results ${results.length}${reasons.map((reason) => `; ${reason}`).join("")}\n`,
  );
}
void main();
