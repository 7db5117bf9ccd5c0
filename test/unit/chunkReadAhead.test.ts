import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ChunkCache,
  PREFETCH_MAX_CHUNK_BYTES,
  SMALL_CHUNKS_HELD_BYTES,
} from "../../src/coordination/dispatch/chunkCache";
import { dispatchJob } from "../../src/coordination/dispatch/dispatch";
import { JobStore } from "../../src/coordination/state/jobStore";
import { redispatchInFlight } from "../../src/coordination/dispatch/redispatch";
import { registerJobs } from "../../src/coordination/jobs/registerJobs";
import { storeManifestSubmission } from "../../src/coordination/jobs/manifest";
import { CHUNK_SIZE, MAX_ITEMS_PER_JOB, storeSubmission } from "../../src/coordination/jobs/submit";
import { MAX_CHUNKS_PER_JOB } from "../../src/coordination/state/jobState";
import { FencedStateStore } from "../../src/library/fencing/FencedStateStore";
import type { ItemInput } from "../../src/coordination/ports/messages";
import type { HeldChunks } from "../../src/coordination/deps";
import { params, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Issue 37.2: whether the leader reads chunks ahead was decided from the size of the chunk just read, so a job whose
 * first chunk was small and whose next chunks were large had them all read at once, and held. The leader's chunk text
 * is measured by the cache's own accounting (`heldBytes`, `peakHeldBytes`).
 */

/** An item of about `chars` characters of JSON. */
const sized = (n: number, chars: number): ItemInput => ({
  inline: JSON.stringify({ k: `k${n % 3}`, v: n, pad: "x".repeat(Math.max(0, chars - 40)) }),
});
/** Items in chunks of 1,000 (the fewest a chunk holds), chunk by chunk: "s" of 30 characters each, "L" of 1,100. */
const itemsOf = (pattern: string): ItemInput[] =>
  pattern
    .split("")
    .flatMap((size, chunk) =>
      Array.from({ length: 1000 }, (_, i) => sized(chunk * 1000 + i, size === "L" ? 1100 : 30)),
    );

/** What each of a job's chunks holds, in characters, read back from storage. */
async function chunkLengths(
  system: { readText(name: string): Promise<string | undefined> },
  id: string,
  count: number,
) {
  const lengths: number[] = [];
  for (let chunk = 0; chunk < count; chunk++)
    lengths.push((await system.readText(`jobs/${id}/items/${chunk}.json`))?.length ?? 0);
  return lengths;
}

/** A world with one job of `pattern`, registered, and a window that spans the whole job. */
async function oneJob(pattern: string, via: "items" | "manifest" = "items") {
  const w = world({ workUnitMaxItems: 1000, dispatchBatchSize: 20_000, maxInFlight: 40_000, workUnitSpread: 1 });
  const items = itemsOf(pattern);
  let id: string;
  if (via === "items") ({ id } = await storeSubmission(w.deps.system, { kind: "group-by", params, items }));
  else {
    await w.inputs.writeText("m.ndjson", `${items.map((item) => JSON.stringify(item)).join("\n")}\n`);
    const stored = await storeManifestSubmission(w.deps, { kind: "group-by", params, manifest: "m.ndjson" });
    if (!stored.ok) throw new Error(JSON.stringify(stored.errors));
    ({ id } = stored);
  }
  // Reads of the job's chunks from here on: how many at once, and how many of large chunks at once. Each takes a turn
  // of the event loop, as a storage request does.
  const reads = { now: 0, most: 0, largeNow: 0, largeMost: 0 };
  const read = w.system.readText.bind(w.system);
  w.system.readText = async (name) => {
    const text = await read(name);
    const large = name.includes("/items/") && (text?.length ?? 0) > 1024 * 1024 ? 1 : 0;
    reads.now++;
    reads.largeNow += large;
    reads.most = Math.max(reads.most, reads.now);
    reads.largeMost = Math.max(reads.largeMost, reads.largeNow);
    await new Promise((resolve) => setImmediate(resolve));
    reads.now--;
    reads.largeNow -= large;
    return text;
  };
  const jobs = new JobStore(new FencedStateStore(w.deps.state, fakeTerm(1)));
  await registerJobs(w.deps, jobs, 1, {});
  const job = await jobs.readJob(id);
  if (job === undefined) throw new Error("expected the job registered");
  const lengths = await chunkLengths(w.deps.system, id, pattern.length);
  // The small chunks' text in all, and the largest chunk: the leader may hold every small one and ONE large one.
  const small = lengths.filter((length) => length <= 1024 * 1024).reduce((a, b) => a + b, 0);
  const largest = Math.max(...lengths);
  return { ...w, jobs, job, small, largest, lengths, reads };
}

describe("the leader's chunks in memory, whatever the mix of sizes (issue 37.2)", () => {
  it("a client submission whose first chunk is small and whose next ones are large: one large chunk held at a time", async () => {
    const { deps, jobs, job, small, largest, lengths, reads } = await oneJob("sLLLLLLLL");
    expect(lengths[0]).toBeLessThan(64 * 1024);
    expect(Math.min(...lengths.slice(1))).toBeGreaterThan(PREFETCH_MAX_CHUNK_BYTES);
    const chunks = new ChunkCache();
    const report = await dispatchJob(deps, jobs, job, 20_000, { chunks });
    expect(report.sent).toBe(9000);
    expect(reads.largeMost).toBe(1);
    expect(chunks.peakHeldBytes).toBeLessThanOrEqual(small + largest);
  });

  it("the same through a manifest (short lines first)", async () => {
    const { deps, jobs, job, small, largest, reads } = await oneJob("sLLLL", "manifest");
    const chunks = new ChunkCache();
    await dispatchJob(deps, jobs, job, 20_000, { chunks });
    expect(reads.largeMost).toBe(1);
    expect(chunks.peakHeldBytes).toBeLessThanOrEqual(small + largest);
  });

  it("the re-send after a lapsed term holds one large chunk at a time too", async () => {
    const { deps, jobs, job, small, largest } = await oneJob("sLLLsLLs");
    await dispatchJob(deps, jobs, job, 20_000, { chunks: new ChunkCache() });
    const sent = await jobs.readJob(job.value.id);
    if (sent === undefined) throw new Error("expected the job");
    const chunks = new ChunkCache();
    const report = await redispatchInFlight(deps, sent.value, { chunks });
    expect(report.items).toBe(8000);
    expect(chunks.peakHeldBytes).toBeLessThanOrEqual(small + largest);
  });

  it("any mix of sizes, dispatched in passes of any budget: every small chunk and one large one at most", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.constantFrom("s", "L"), { minLength: 2, maxLength: 8 }),
        fc.integer({ min: 300, max: 9000 }),
        async (pattern, budget) => {
          const { deps, jobs, job, small, largest, reads } = await oneJob(pattern.join(""));
          const chunks = new ChunkCache();
          let latest = job;
          for (let pass = 0; latest.value.dispatched < latest.value.itemCount && pass < 40; pass++) {
            await dispatchJob(deps, jobs, latest, budget, { chunks });
            latest = (await jobs.readJob(job.value.id)) ?? latest;
          }
          expect(latest.value.dispatched).toBe(latest.value.itemCount);
          expect(reads.largeMost).toBeLessThanOrEqual(1);
          expect(chunks.peakHeldBytes).toBeLessThanOrEqual(small + largest);
          expect(chunks.peakHeldBytes).toBeLessThanOrEqual(SMALL_CHUNKS_HELD_BYTES + largest);
        },
      ),
      { numRuns: 8, seed: 372 },
    );
  });

  it("a job records at most MAX_CHUNKS_PER_JOB chunk sizes: its items fill that many chunks at the most", () => {
    expect(MAX_CHUNKS_PER_JOB).toBe(Math.ceil(MAX_ITEMS_PER_JOB / CHUNK_SIZE));
  });

  it("small chunks are still read ahead, several at once, among large ones too", async () => {
    const { deps, jobs, job, reads } = await oneJob("sssssssss", "manifest");
    await dispatchJob(deps, jobs, job, 20_000, { chunks: new ChunkCache() });
    expect(reads.most).toBeGreaterThan(4);
    const mixed = await oneJob("Lsssssss");
    await dispatchJob(mixed.deps, mixed.jobs, mixed.job, 20_000, { chunks: new ChunkCache() });
    expect(mixed.reads.most).toBeGreaterThan(4);
  });

  it("the internal threshold scales what is large, and a watcher sees every chunk held and read (the simulator's check)", async () => {
    const w = world({ workUnitMaxItems: 1000, dispatchBatchSize: 20_000, maxInFlight: 40_000, workUnitSpread: 1 });
    // Chunks of one item, 100 characters the threshold: "s" of about 30 characters, "L" of 300.
    const items = "sLLsLsLL".split("").map((size, n) => sized(n, size === "L" ? 300 : 30));
    const { id } = await storeSubmission(w.deps.system, { kind: "group-by", params, items }, { chunkSize: 1 });
    const seen: HeldChunks[] = [];
    const chunks = new ChunkCache({ largeChunkChars: 100, watch: (cache) => seen.push(cache) });
    expect(seen).toEqual([chunks]);
    expect(chunks.smallChunksHeldBytes).toBe(16 * 100);
    // At every chunk read, once it is under way: is it among the reads the cache says it waits for, and how many large
    // chunks (by their stored size) does the cache hold or read then?
    const sizes = new Map<string, number>();
    const observed = { unlisted: [] as string[], mostLarge: 0 };
    const read = w.system.readText.bind(w.system);
    w.system.readText = async (name) => {
      const text = await read(name);
      if (!name.includes("/items/")) return text;
      sizes.set(name, text?.length ?? 0);
      await new Promise((resolve) => setImmediate(resolve));
      if (!chunks.reading.includes(name)) observed.unlisted.push(name);
      const large = [...chunks.held, ...chunks.reading].filter((chunk) => (sizes.get(chunk) ?? 0) > 100);
      observed.mostLarge = Math.max(observed.mostLarge, large.length);
      return text;
    };
    const jobs = new JobStore(new FencedStateStore(w.deps.state, fakeTerm(1)));
    await registerJobs(w.deps, jobs, 1, {});
    const job = await jobs.readJob(id);
    if (job === undefined) throw new Error("expected the job registered");
    expect(job.value.chunkSize).toBe(1);
    const report = await dispatchJob(w.deps, jobs, job, 20_000, { chunks });
    expect(report.sent).toBe(8);
    expect(sizes.size).toBe(8);
    expect(observed.unlisted).toEqual([]);
    expect(observed.mostLarge).toBe(1);
    expect(chunks.held.length).toBeGreaterThan(0);
    expect(chunks.reading).toEqual([]);
  });
});
