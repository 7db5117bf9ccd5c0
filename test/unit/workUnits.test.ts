import { describe, expect, it } from "vitest";
import { ConfigurationError } from "../../src/library/errors";
import { groupByView, type GroupByPartial } from "../../src/groupBy/groupBy";
import { requestCancel } from "../../src/coordination/jobs/cancel";
import { keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { CHUNK_SIZE, JobWriter, storeSubmission } from "../../src/coordination/jobs/submit";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import {
  HOLD_PASSED_MS,
  ONE_PASS,
  item,
  params,
  readJob,
  unawareOfStops,
  work,
  world,
} from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/** A unit's work message as sent: its first item and how many it carries. */
const shape = (body: string): [number, number] => {
  const unit = JSON.parse(body) as { v: number; first: number; inputs: unknown[] };
  return [unit.first, unit.inputs.length];
};
const items = (count: number) => Array.from({ length: count }, (_, i) => item(`k${i % 3}`, i));
const delivery = (dequeueCount = 1) => ({ id: "m1", dequeueCount, maxDequeueCount: 5 });

describe("work units (issue 9, part 1)", () => {
  it("dispatch packs a job's items into units of at most WORK_UNIT_MAX_ITEMS, contiguous, whole units per pass", async () => {
    const { deps, work: queue, state } = world({ workUnitMaxItems: 4, dispatchBatchSize: 5, maxInFlight: 100 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(11) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // 5 items of budget start two units; the second is sent whole, so the cursor stays on a unit boundary.
    expect(queue.bodies().map(shape)).toEqual([
      [0, 4],
      [4, 4],
    ]);
    expect((await readJob(state, id))?.dispatched).toBe(8);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(queue.bodies().map(shape)).toEqual([
      [0, 4],
      [4, 4],
      [8, 3],
    ]);
  });

  it("a unit closes before its JSON would pass WORK_UNIT_MAX_BYTES; one item larger than that still goes alone", async () => {
    const big = { inline: JSON.stringify({ k: "big", v: 1 }) + " ".repeat(1500) };
    const { deps, work: queue } = world({ workUnitMaxItems: 32, workUnitMaxBytes: 1024 });
    await storeSubmission(deps.system, { kind: "group-by", params, items: [...items(3), big, ...items(2)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(queue.bodies().map(shape)).toEqual([
      [0, 3],
      [3, 1],
      [4, 2],
    ]);
    for (const body of queue.bodies())
      if (shape(body)[1] > 1) expect(Buffer.byteLength(body)).toBeLessThanOrEqual(1024);
  });

  it("an item whose work message could not fit a queue message (48 KiB of JSON) fails alone with the reason; the rest completes", async () => {
    const { deps, work: queue, results, state, system } = world({ workUnitMaxItems: 4 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(6) });
    // Written by an older submitter that counted raw bytes: 30,000 quotes are 60,000 bytes of JSON.
    const chunk = JSON.parse((await system.readText(keys.chunk(id, 0))) ?? "[]") as unknown[];
    chunk[2] = { inline: '"'.repeat(30_000) };
    await system.writeText(keys.chunk(id, 0), JSON.stringify(chunk));
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    for (const body of queue.bodies()) expect(Buffer.byteLength(body)).toBeLessThanOrEqual(48 * 1024);
    expect(queue.bodies().map(shape)).toEqual([
      [0, 2],
      [3, 3],
    ]);
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(results.length).toBe(0);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 5, failedCount: 1 });
    expect(job?.failures).toEqual([
      { item: 2, reason: expect.stringMatching(/not dispatched: .*49152 bytes/) as unknown },
    ]);
  });

  it("an input blob name the storage adapter refuses fails its item alone, on the first delivery (not retried)", async () => {
    const { deps, results } = world();
    const open = deps.inputs.open.bind(deps.inputs);
    deps.inputs.open = (name, options) =>
      name === "refused.ndjson"
        ? Promise.reject(new ConfigurationError(`Blob name "${name}" is refused in container "in": test`))
        : open(name, options);
    const inputs = [item("a", 1), { blob: "refused.ndjson" }, item("a", 2)];
    await processWorkMessage(deps, { v: 2, jobId: "j1", first: 0, kind: "group-by", params, inputs }, delivery(1));
    expect(results.length).toBe(1);
    const result = JSON.parse(results.bodies()[0] ?? "{}") as { done: unknown; failed: unknown };
    expect(result.done).toEqual([
      [0, 0],
      [2, 2],
    ]);
    expect(result.failed).toEqual([
      { items: [[1, 1]], reason: expect.stringMatching(/is refused in container/) as unknown },
    ]);
  });

  it("the worker sends ONE result for a unit: done items with their merged partial, and each unusable item failed alone with its reason", async () => {
    const { deps, results } = world();
    const inputs = [
      item("a", 1),
      { inline: '{"k":"a","v":"lots"}' },
      item("b", 2),
      item("a", 3),
      { blob: "missing.ndjson" },
    ];
    const outcome = await processWorkMessage(
      deps,
      { v: 2, jobId: "j1", first: 10, kind: "group-by", params, inputs },
      delivery(),
    );
    expect(outcome).toMatchObject({ status: "failed", jobId: "j1", item: 10, count: 5 });
    expect(results.length).toBe(1);
    const result = JSON.parse(results.bodies()[0] ?? "{}") as {
      done: unknown;
      failed: unknown;
      partial: GroupByPartial;
    };
    expect(result).toMatchObject({
      v: 2,
      jobId: "j1",
      first: 10,
      count: 5,
      done: [
        [10, 10],
        [12, 13],
      ],
    });
    expect(result.failed).toEqual([
      { items: [[11, 11]], reason: expect.stringMatching(/is not a number/) as unknown },
      { items: [[14, 14]], reason: 'input blob "missing.ndjson" does not exist' },
    ]);
    expect(groupByView(result.partial)).toEqual({
      a: { count: 2, sum: 4, min: 1, max: 3 },
      b: { count: 1, sum: 2, min: 2, max: 2 },
    });
  });

  it("a transient failure of one item retries the whole unit (nothing sent); on the last delivery only the items it hit fail", async () => {
    const { deps, results } = world();
    deps.inputs.open = () => Promise.reject(new Error("storage is down"));
    const message = {
      v: 2,
      jobId: "j1",
      first: 0,
      kind: "group-by",
      params,
      inputs: [item("a", 1), { blob: "x.ndjson" }, item("b", 2)],
    };
    await expect(processWorkMessage(deps, message, delivery(2))).rejects.toThrow("storage is down");
    expect(results.length).toBe(0);
    await expect(processWorkMessage(deps, message, delivery(5))).resolves.toMatchObject({ status: "failed" });
    expect(JSON.parse(results.bodies()[0] ?? "{}")).toMatchObject({
      done: [
        [0, 0],
        [2, 2],
      ],
      failed: [
        { items: [[1, 1]], reason: expect.stringMatching(/all 5 deliveries; last error: storage is down/) as unknown },
      ],
    });
  });

  it("the leader sets every bit of a unit in the write that merges its partial; a duplicated or replayed unit is discarded by its bits", async () => {
    const { deps, work: queue, results, state } = world({ workUnitMaxItems: 4 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("a", 2), item("b", 5), { inline: "not json" }, item("b", 1)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const sent = queue.bodies();
    await work(deps, queue);
    expect(results.length).toBe(2); // one result per unit, not per item
    await results.send(results.bodies()); // every result delivered a second time
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await queue.send(sent); // and every unit replayed later, after the job completed
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({
      status: "completed",
      doneCount: 4,
      failedCount: 1,
      failures: [{ item: 3, reason: "line 1 is not valid JSON" }],
    });
    expect(groupByView(job?.aggregate as GroupByPartial)).toEqual({
      a: { count: 2, sum: 3, min: 1, max: 2 },
      b: { count: 2, sum: 6, min: 1, max: 5 },
    });
    expect(results.length).toBe(0);
  });

  it("a crash between sending units and advancing the cursor re-sends the same units, whose results count once", async () => {
    const { deps, work: queue, state } = world({ workUnitMaxItems: 3 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(7) });
    const original = deps.state.write.bind(deps.state);
    let crash = true;
    const dying = fakeTerm(1);
    deps.state.write = (key, value, condition, options) => {
      if (crash && key === keys.jobState(id) && (value as { dispatched?: number }).dispatched !== 0) {
        dying.end(); // the leader dies with its write in flight
        return Promise.reject(new Error("leader died"));
      }
      return original(key, value, condition, options);
    };
    await expect(runCoordinationStep(deps, dying, ONE_PASS)).rejects.toThrow();
    crash = false;
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect(queue.bodies().map(shape)).toEqual([
      [0, 3],
      [3, 3],
      [6, 1],
      [0, 3],
      [3, 3],
      [6, 1],
    ]);
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 7, failedCount: 0 });
    expect(groupByView(job?.aggregate as GroupByPartial)).toEqual({
      k0: { count: 3, sum: 9, min: 0, max: 6 },
      k1: { count: 2, sum: 5, min: 1, max: 4 },
      k2: { count: 2, sum: 7, min: 2, max: 5 },
    });
  });

  it("a unit the host poisoned fails each of its items with the reason; the worker's rejection of a unit names all its items", async () => {
    const { deps, work: queue, poison, state, clock } = world({ workUnitMaxItems: 4 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(6) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const [first, second] = await queue.receive(2, 60);
    await poison.send([first?.rawText ?? ""]); // retries exhausted: the host moved the unit
    // A kind no worker has is rejected on the unit's last delivery (thrown back before it).
    await processWorkMessage(deps, { ...(JSON.parse(second?.rawText ?? "{}") as object), kind: "gone" }, delivery(5));
    expect(JSON.parse(poison.bodies()[1] ?? "{}")).toMatchObject({
      rejected: { by: "worker", jobId: id, item: 4, count: 2 },
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // held: another copy of a unit could still be done
    clock.ms += HOLD_PASSED_MS;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 0, failedCount: 6 });
    expect(job?.failures.map((failure) => failure.item)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(job?.failures[0]?.reason).toMatch(/retries exhausted/);
    expect(job?.failures[4]?.reason).toMatch(/rejected by the worker: unknown task kind "gone"/);
  });

  it("cancel with units in flight: the rest of the job is skipped, and a late unit's result is discarded whole, never counted", async () => {
    const {
      deps,
      work: queue,
      results,
      state,
    } = world({ workUnitMaxItems: 5, dispatchBatchSize: 10, maxInFlight: 10 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(30) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue, deps, 1); // one unit of 5 done; the other is still queued
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // folds it, and dispatches one more unit (10 in flight)
    await requestCancel(deps, id);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({
      status: "cancelled",
      doneCount: 5,
      skippedCount: 25,
      dispatched: 15,
    });
    // A worker that does not know (an older version's): it still runs the queued units.
    expect(await work(deps, queue, { ...deps, jobStops: unawareOfStops })).toBe(2);
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(report).toMatchObject({ discarded: 2, folded: 0, dispatched: 0 });
    expect(results.length).toBe(0);
    expect(await readJob(state, id)).toMatchObject({ status: "cancelled", doneCount: 5, skippedCount: 25 });
  });

  it("a unit's outcome blob and a v1 item's partial blob (a mixed deploy) never share a name, and each is folded from its own", async () => {
    const { deps, results, system, inputs, state } = world({ workUnitMaxItems: 2 });
    // Inputs whose partials are too large for a result message (> 40 KiB), so each goes to a blob.
    for (const name of ["a", "b"]) {
      const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ k: `${name}${i}`, v: 1 }));
      await inputs.writeText(`${name}.ndjson`, lines.join("\n"));
    }
    const [a, b] = [{ blob: "a.ndjson" }, { blob: "b.ndjson" }];
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [a, b] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // A leader of the version before units sent item 0 alone and died before recording it; this one sent the unit.
    await processWorkMessage(deps, { v: 1, jobId: id, item: 0, kind: "group-by", params, input: a }, delivery());
    await processWorkMessage(deps, { v: 2, jobId: id, first: 0, kind: "group-by", params, inputs: [a, b] }, delivery());
    const [v1, v2] = results.bodies().map((body) => JSON.parse(body) as { partialBlob?: string; outcomeBlob?: string });
    expect(v1?.partialBlob).toBe(keys.partial(id, 0));
    expect(v2?.outcomeBlob).toBeDefined();
    expect(v2?.outcomeBlob).not.toBe(v1?.partialBlob);
    expect(JSON.parse(system.blobs.get(keys.partial(id, 0)) as string)).toBeInstanceOf(Array); // the v1 partial, intact
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    // Item 0 counted once, from the first result folded; the unit overlaps it, so its other item fails with the reason.
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 1, failedCount: 1 });
    expect(job?.failures).toEqual([
      { item: 1, reason: expect.stringMatching(/overlaps items already counted/) as unknown },
    ]);
    expect(Object.keys(groupByView(job?.aggregate as GroupByPartial))).toHaveLength(3000);
  });

  it("a unit's outcome blob written by a worker of the previous version (named as a v1 partial) is still folded", async () => {
    const { deps, results, system, state } = world({ workUnitMaxItems: 2 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("b", 2)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const partial = [
      ["a", 1, "1000000", 1, 1],
      ["b", 1, "2000000", 2, 2],
    ];
    await system.writeText(keys.partial(id, 0), JSON.stringify({ done: [[0, 1]], partial, failed: [] }));
    await results.send([JSON.stringify({ v: 2, jobId: id, first: 0, count: 2, outcomeBlob: keys.partial(id, 0) })]);
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 2, failedCount: 0 });
  });
});

describe("units sized by bytes (issue 24)", () => {
  /** The app's defaults for units: WORK_UNIT_MAX_ITEMS 1000, blob units of 32, spread over 16, 16,384 in flight. */
  const defaults = {
    workUnitMaxItems: 1000,
    workUnitMaxBlobItems: 32,
    workUnitSpread: 16,
    dispatchBatchSize: 8192,
    maxInFlight: 16_384,
  };
  const small = (count: number) =>
    Array.from({ length: count }, (_, i) => ({ inline: `region,amount\nr${i % 7},${i}.25\nr${(i + 3) % 7},1.5` }));

  it("a large job of small inline items goes out in units as full as WORK_UNIT_MAX_BYTES allows", async () => {
    const { deps, work: queue, state } = world({ ...defaults, workUnitMaxBytes: 45 * 1024 });
    const inputs = small(20_000);
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: inputs });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job?.unitMaxItems).toBe(1000);
    const units = queue.bodies();
    // The first pass: 8,192 items of budget, whole units, so a little more.
    expect(units.reduce((sum, body) => sum + shape(body)[1], 0)).toBe(job?.dispatched);
    expect(job?.dispatched).toBeGreaterThanOrEqual(8192);
    // Each unit holds as many items as fit 45 KiB: adding the next item would pass it (give or take the few bytes
    // dispatch reserves for the widest item index in `first`).
    const itemBytes = Math.max(...inputs.map((input) => Buffer.byteLength(JSON.stringify(input)) + 1));
    for (const body of units) {
      expect(Buffer.byteLength(body)).toBeLessThanOrEqual(45 * 1024);
      expect(Buffer.byteLength(body) + itemBytes + 8).toBeGreaterThan(45 * 1024);
      expect(shape(body)[1]).toBeGreaterThan(400);
    }
  });

  it("a small job is spread over WORK_UNIT_SPREAD units, not one unit on one worker, nor a unit more than a queue batch", async () => {
    const { deps, work: queue, state } = world(defaults);
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: small(200) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // 16 units, as many as one instance's queue trigger takes at a poll (host.json batchSize): none left over.
    expect(queue.bodies().map(shape)).toEqual([...Array.from({ length: 15 }, (_, unit) => [unit * 13, 13]), [195, 5]]);
    expect((await readJob(state, id))?.unitMaxItems).toBe(13);
  });

  it("the spread is of the in-flight window: with a small DISPATCH_BATCH_SIZE a large job still reaches many workers", async () => {
    const { deps, work: queue } = world({ ...defaults, dispatchBatchSize: 40, maxInFlight: 80 });
    await storeSubmission(deps.system, { kind: "group-by", params, items: small(5000) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // 80 items in flight over 16 units: units of 5; a pass of 40 items sends 8 of them (a second pass, 8 more).
    const units = queue.bodies().map(shape);
    expect(units.length).toBeGreaterThanOrEqual(8);
    expect(units).toEqual(Array.from({ length: units.length }, (_, unit) => [unit * 5, 5]));
  });

  it("a job naming input blobs keeps units of WORK_UNIT_MAX_BLOB_ITEMS; the submitter counts its blob items", async () => {
    const { deps, work: queue, state, system } = world({ ...defaults, workUnitSpread: 1 });
    const mixed = [...small(90), { blob: "in/a.csv" }, ...small(9)];
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: mixed });
    expect(JSON.parse((await system.readText(keys.spec(id))) ?? "{}")).toMatchObject({ itemCount: 100, blobItems: 1 });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(queue.bodies().map(shape)).toEqual([
      [0, 32],
      [32, 32],
      [64, 32],
      [96, 4],
    ]);
    expect((await readJob(state, id))?.unitMaxItems).toBe(32);
  });

  it("a spec that does not count its blob items (an older submitter) is taken as naming blobs", async () => {
    const { deps, work: queue, system } = world({ ...defaults, workUnitSpread: 1 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: small(100) });
    const spec = JSON.parse((await system.readText(keys.spec(id))) ?? "{}") as Record<string, unknown>;
    delete spec.blobItems;
    await system.writeText(keys.spec(id), JSON.stringify(spec));
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(queue.bodies().map((body) => shape(body)[1])).toEqual([32, 32, 32, 4]);
  });

  it("a job registered before this change keeps the units it registered with (32 items), whatever the settings now", async () => {
    const { deps, work: queue, state } = world({ ...defaults, workUnitMaxItems: 32, workUnitSpread: 1 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: small(100) });
    // Registered, nothing dispatched yet: the budget of the first step is spent before dispatch.
    await runCoordinationStep({ ...deps, dispatchBatchSize: 0 }, fakeTerm(1), ONE_PASS);
    expect((await readJob(state, id))?.unitMaxItems).toBe(32);
    // The leader is upgraded to the new defaults; the job keeps its 32-item units.
    const upgraded = { ...deps, ...defaults };
    await runCoordinationStep(upgraded, fakeTerm(2), ONE_PASS);
    expect(queue.bodies().map((body) => shape(body)[1])).toEqual([32, 32, 32, 4]);
  });

  /** Chunk reads of `files` in flight at once, at most, with each read taking a few ms; and reads per chunk. */
  const watchChunkReads = (files: { readText: (name: string) => Promise<string | undefined> }) => {
    const seen = { inFlight: 0, most: 0, reads: new Map<string, number>() };
    const readText = files.readText.bind(files);
    files.readText = async (name) => {
      if (!name.includes("/items/")) return readText(name);
      seen.reads.set(name, (seen.reads.get(name) ?? 0) + 1);
      seen.inFlight++;
      seen.most = Math.max(seen.most, seen.inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      try {
        return await readText(name);
      } finally {
        seen.inFlight--;
      }
    };
    return seen;
  };

  it("a pass reads the chunks it needs ahead, several at once, each once: sending waits for one read, not all", async () => {
    const { deps, work: queue, system } = world(defaults);
    // Chunks of 1,000 items, as a manifest's job has (an inline submission of small items has larger chunks).
    const writer = new JobWriter(deps.system, { chunkSize: CHUNK_SIZE });
    for (const input of small(20_000)) await writer.add(input);
    await writer.commit({ kind: "group-by", params });
    const seen = watchChunkReads(system);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(queue.length).toBeGreaterThan(0);
    // 8,192 items and then some: chunks 0–8, read with up to 8 ahead of the one being packed.
    expect(seen.most).toBeGreaterThan(4);
    expect(seen.most).toBeLessThanOrEqual(9);
    expect([...seen.reads.values()].every((reads) => reads === 1)).toBe(true);
  });

  it("chunks of large items (over 1 MiB of text) are read one at a time, as before: the leader holds one", async () => {
    const { deps, system } = world({ ...defaults, dispatchBatchSize: 2500, maxInFlight: 5000 });
    const large = Array.from({ length: 3000 }, (_, i) => ({ inline: `region,amount\nr${i},1.5\n${"#".repeat(1100)}` }));
    await storeSubmission(deps.system, { kind: "group-by", params, items: large });
    const seen = watchChunkReads(system);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(seen.reads.size).toBe(3);
    expect(seen.most).toBe(1);
  });

  it("the worker merges a unit's partials as its items finish: it never holds more than ⌈log2 n⌉ + 1 of them", async () => {
    const { deps, results } = world();
    let live = 0;
    let mostLive = 0;
    deps.registry.register({
      name: "counting",
      process: () => {
        live++;
        mostLive = Math.max(mostLive, live);
        return 1;
      },
      aggregate: {
        merge: (a: number, b: number) => {
          live--; // two partials in, one out
          return a + b;
        },
        empty: () => 0,
      },
    });
    const unit = {
      v: 2,
      jobId: "j1",
      first: 0,
      kind: "counting",
      params: null,
      inputs: Array.from({ length: 1000 }, () => ({ inline: "x" })),
    };
    await expect(processWorkMessage(deps, unit, delivery())).resolves.toMatchObject({ status: "processed" });
    expect(JSON.parse(results.bodies()[0] ?? "{}")).toMatchObject({ count: 1000, partial: 1000 });
    expect(mostLive).toBeLessThanOrEqual(Math.ceil(Math.log2(1000)) + 1);
  });
});
