import { describe, expect, it } from "vitest";
import { keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import {
  CHUNK_SIZE,
  CHUNK_TARGET_CHARS,
  MAX_CHUNK_SIZE,
  chunkSizeFor,
  storeSubmission,
} from "../../src/coordination/jobs/submit";
import { ONE_PASS, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Chunks sized by bytes (issue 24): each chunk of an inline submission is one blob write and one read, so small items
 * travel many to a chunk; large ones keep the chunk of before.
 */
const small = (count: number) =>
  Array.from({ length: count }, (_, i) => ({ inline: JSON.stringify({ k: `k${i % 7}`, v: i }).padEnd(91, " ") }));

describe("chunks sized by bytes", () => {
  it("20,000 items of 91 bytes go in 3 chunks (were 20), each within 1 MiB of text; the job completes with every item", async () => {
    const {
      deps,
      system,
      work: queue,
      state,
    } = world({ workUnitMaxItems: 400, dispatchBatchSize: 10_000, maxInFlight: 20_000 });
    const items = small(20_000);
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items });
    const chunks = [...system.blobs.keys()].filter((name) => name.startsWith(`jobs/${id}/items/`));
    expect(chunks).toHaveLength(Math.ceil(20_000 / chunkSizeFor(items)));
    expect(chunks.length).toBeLessThanOrEqual(3);
    for (const name of chunks) expect((await system.readText(name))?.length).toBeLessThanOrEqual(CHUNK_TARGET_CHARS);
    const spec = JSON.parse((await system.readText(keys.spec(id))) ?? "{}") as { chunkSize: number };
    expect(spec.chunkSize).toBe(chunkSizeFor(items));
    for (let round = 0; round < 4; round++) {
      await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
      await work(deps, queue);
    }
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 20_000, failedCount: 0 });
  });

  it("keeps 1,000 items a chunk for large items, and never more than the most a chunk may hold", () => {
    expect(chunkSizeFor([{ inline: "x".repeat(40_000) }, ...small(10)])).toBe(CHUNK_SIZE);
    expect(chunkSizeFor([{ inline: "" }])).toBe(MAX_CHUNK_SIZE);
    // 5 KiB items: 1,000 of them would be 5 MiB, more than the target; the floor of 1,000 holds (as before).
    expect(chunkSizeFor([{ inline: "x".repeat(5_000) }])).toBe(CHUNK_SIZE);
    // 300-character items: about 3,400 fit 1 MiB.
    const size = chunkSizeFor([{ inline: "x".repeat(300) }]);
    expect(size * (JSON.stringify({ inline: "x".repeat(300) }).length + 1)).toBeLessThanOrEqual(CHUNK_TARGET_CHARS);
    expect((size + 1) * (JSON.stringify({ inline: "x".repeat(300) }).length + 1)).toBeGreaterThan(
      CHUNK_TARGET_CHARS - 2,
    );
  });
});
