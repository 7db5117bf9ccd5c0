import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ChunkCache } from "../../src/coordination/dispatch/chunkCache";
import { groupByView, type GroupByPartial } from "../../src/groupBy/groupBy";
import { keys, jobStateSchema } from "../../src/coordination/state/jobState";
import { packUnits } from "../../src/coordination/dispatch/packUnits";
import { redispatchInFlight, unfinishedRuns } from "../../src/coordination/dispatch/redispatch";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { Bitmap } from "../../src/coordination/state/bitmap";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm, type MemoryQueue } from "../support/memoryPorts";
import type { CoordinationDeps } from "../../src/coordination/deps";
import type { ReceivedMessage } from "../../src/coordination/ports/ports";

/**
 * After a term whose lease lapsed (a crash, a freeze, a takeover), the new leader sends the job's units in flight again
 * at once: a dead process's units would otherwise come back only when the host's 10-minute message visibility ran out.
 */

/** A unit's work message as sent: its first item and its inputs. */
const unit = (body: string): { first: number; inputs: unknown[] } =>
  JSON.parse(body) as { first: number; inputs: unknown[] };
/** A worker runs one received unit to its end and settles it (its first delivery). */
async function finish(deps: CoordinationDeps, queue: MemoryQueue, message: ReceivedMessage): Promise<void> {
  await processWorkMessage(deps, JSON.parse(message.text ?? "") as unknown, {
    id: message.id,
    dequeueCount: 1,
    maxDequeueCount: 5,
  });
  await queue.delete(message);
}
const items = (count: number) => Array.from({ length: count }, (_, i) => item(`k${i % 3}`, i));

describe("units in flight sent again after a lapsed term (issue 22)", () => {
  it("a term after a lapsed one sends the units a dead worker holds again, the same units, at once; the job completes counted once", async () => {
    const { deps, work: queue, state } = world({ workUnitMaxItems: 4, dispatchBatchSize: 12, maxInFlight: 12 });
    // 24 items: what is left past the window is always more than a spread (1 unit), so it waits for results.
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(24) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const sent = queue.bodies();
    expect(sent.map((body) => unit(body).first)).toEqual([0, 4, 8]);
    // A worker process takes two units and dies with them: the host keeps them invisible for 10 minutes.
    const held = await queue.receive(2, 600);
    expect(held).toHaveLength(2);
    // Another worker completes the third, and its result is folded.
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ doneCount: 4, dispatched: 16 });

    await runCoordinationStep(deps, fakeTerm(3, "leader-3", "lapsed"), ONE_PASS);
    // Every unit in flight twice: the two held (invisible for 10 minutes) and the one still queued, each sent again as
    // it was first sent, visible now.
    expect(
      queue
        .bodies()
        .map((body) => unit(body).first)
        .sort((a, b) => a - b),
    ).toEqual([0, 0, 4, 4, 12, 12]);
    for (const message of held) expect(queue.bodies().filter((body) => body === message.text)).toHaveLength(2);
    const visible = (await queue.peek(32)).map((message) => message.text);
    for (const message of held) expect(visible).toContain(message.text);

    // Everything, duplicates included, is worked and folded: each item counted once.
    for (let round = 0; round < 5; round++) {
      await work(deps, queue);
      await runCoordinationStep(deps, fakeTerm(3, "leader-3", "released"), ONE_PASS);
    }
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 24, failedCount: 0 });
    // Items i = 0..23 with key k(i mod 3) and value i: exactly once each.
    expect(groupByView(job?.aggregate as GroupByPartial)).toEqual({
      k0: { count: 8, sum: 84, min: 0, max: 21 },
      k1: { count: 8, sum: 92, min: 1, max: 22 },
      k2: { count: 8, sum: 100, min: 2, max: 23 },
    });
  });

  it("every unit of a dead term is sent again, its tail past the window too, however the runs of unfinished items fall (issue 37.1)", async () => {
    // A window of 8, units of 2, a spread of 3: a 12-item job goes out whole (its tail of 4 with the window).
    const {
      deps,
      work: queue,
      state,
    } = world({
      workUnitMaxItems: 2,
      workUnitSpread: 3,
      dispatchBatchSize: 8,
      maxInFlight: 8,
    });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(12) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(queue.bodies().map((body) => unit(body).first)).toEqual([0, 2, 4, 6, 8, 10]);
    // A worker process takes every unit and dies; before it does, it finishes the unit of items 8 and 9.
    const held = await queue.receive(6, 600);
    const finished = held.find((message) => unit(message.text ?? "").first === 8);
    if (finished === undefined) throw new Error("expected the unit of item 8");
    await finish(deps, queue, finished);
    await runCoordinationStep(deps, fakeTerm(2, "leader-2", "released"), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ doneCount: 2, dispatched: 12 });

    // In flight: items 0–7 (a window's worth) and 10–11 (the tail). Every one of those units is sent again.
    const before = queue.bodies().length;
    const report = await runCoordinationStep(deps, fakeTerm(3, "leader-3", "lapsed"), ONE_PASS);
    const again = queue
      .bodies()
      .slice(before)
      .map((body) => unit(body).first);
    expect(again).toEqual([0, 2, 4, 6, 10]);
    expect(report.redispatched).toBe(10);
  });

  it("the re-send covers exactly the items in flight, each once, for any window, unit size, spread and results folded", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 24 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 2, max: 10 }),
        fc.integer({ min: 1, max: 4 }),
        // Mostly not: a dead worker held most units.
        fc.array(
          fc.nat(3).map((n) => n === 0),
          { minLength: 120, maxLength: 120 },
        ),
        async (count, unitItems, window, spread, finishes) => {
          const {
            deps,
            work: queue,
            state,
          } = world({
            workUnitMaxItems: unitItems,
            workUnitSpread: spread,
            dispatchBatchSize: window,
            maxInFlight: window,
          });
          const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(count) });
          // Three rounds: units go out, a worker finishes some (the others die with it), their results are folded.
          let n = 0;
          for (let round = 0; round < 3; round++) {
            await runCoordinationStep(deps, fakeTerm(1 + round), ONE_PASS);
            for (const message of await queue.receive(40, 600)) {
              if (finishes[n++] !== true) continue;
              await finish(deps, queue, message);
            }
          }
          await runCoordinationStep(deps, fakeTerm(4, "leader-4", "released"), ONE_PASS);
          const job = await readJob(state, id);
          if (job === undefined) throw new Error("expected the job's state");
          const done = Bitmap.fromBase64(job.doneBits, count);
          const open = Array.from({ length: job.dispatched }, (_, i) => i).filter((i) => !done.has(i));
          const before = queue.bodies().length;
          const report = await redispatchInFlight(deps, job, { chunks: new ChunkCache() });
          const again = queue
            .bodies()
            .slice(before)
            .flatMap((body) => {
              const sent = unit(body);
              return sent.inputs.map((_, offset) => sent.first + offset);
            });
          expect(again).toEqual(open);
          expect(report.items).toBe(open.length);
        },
      ),
      { numRuns: 200, seed: 37 },
    );
  });

  it("a term after a released one sends nothing again", async () => {
    const { deps, work: queue } = world({ workUnitMaxItems: 4, dispatchBatchSize: 12, maxInFlight: 12 });
    await storeSubmission(deps.system, { kind: "group-by", params, items: items(20) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await queue.receive(3, 600);
    const report = await runCoordinationStep(deps, fakeTerm(2, "leader-2", "released"), ONE_PASS);
    expect(report.redispatched).toBe(0);
    expect(queue.bodies()).toHaveLength(3);
  });

  it("each job's units are sent again once per lapsed term, not on every pass", async () => {
    const { deps, work: queue } = world({ workUnitMaxItems: 4, dispatchBatchSize: 8, maxInFlight: 8 });
    await storeSubmission(deps.system, { kind: "group-by", params, items: items(20) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await queue.receive(2, 600);
    const report = await runCoordinationStep(deps, fakeTerm(2, "leader-2", "lapsed"), {
      budgetMs: 60_000,
      maxPasses: 4,
    });
    expect(report.redispatched).toBe(8);
    expect(queue.bodies()).toHaveLength(4);
  });

  it("a job's units are sent again after at most 3 lapsed terms: a unit that kills its leader's process cannot be multiplied without end", async () => {
    const { deps, work: queue, state } = world({ workUnitMaxItems: 4, dispatchBatchSize: 8, maxInFlight: 8 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(20) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const sentAgain: number[] = [];
    for (let epoch = 2; epoch <= 6; epoch++) {
      const report = await runCoordinationStep(deps, fakeTerm(epoch, `leader-${epoch}`, "lapsed"), ONE_PASS);
      sentAgain.push(report.redispatched);
    }
    expect(sentAgain).toEqual([8, 8, 8, 0, 0]);
    expect((await readJob(state, id))?.redispatches).toBe(3);
    expect(queue.bodies()).toHaveLength(2 + 3 * 2);
  });

  it("a re-send that fails is tried again at the job's next pass of the same step", async () => {
    const { deps, work: queue } = world({ workUnitMaxItems: 4, dispatchBatchSize: 8, maxInFlight: 8 });
    await storeSubmission(deps.system, { kind: "group-by", params, items: items(20) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const send = queue.send.bind(queue);
    let failures = 1;
    queue.send = (texts, options) =>
      failures-- > 0 ? Promise.reject(new Error("storage unavailable (test)")) : send(texts, options);
    const report = await runCoordinationStep(deps, fakeTerm(2, "leader-2", "lapsed"), {
      budgetMs: 60_000,
      maxPasses: 2,
    });
    expect(report.jobErrors).toBe(1);
    expect(report.redispatched).toBe(8);
  });

  it("a job registered before units kept their limits is not sent again: its units were packed by other rules", async () => {
    const { deps, work: queue, state } = world({ workUnitMaxItems: 4, dispatchBatchSize: 8, maxInFlight: 8 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(20) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // As an older version stored it: no unit limits.
    const stored = await state.read(keys.jobState(id));
    if (stored === undefined) throw new Error("expected the job's state");
    const older = { ...(stored.value as Record<string, unknown>) };
    delete older.unitMaxItems;
    delete older.unitMaxBytes;
    await state.write(keys.jobState(id), older, 1, { ifMatch: stored.etag });
    const report = await runCoordinationStep(deps, fakeTerm(2, "leader-2", "lapsed"), ONE_PASS);
    expect(report.redispatched).toBe(0);
    expect(queue.bodies()).toHaveLength(2);
  });

  it("the runs to send again are the items below the cursor with neither bit set", () => {
    const done = Bitmap.empty(12);
    const failed = Bitmap.empty(12);
    for (const i of [0, 1, 5, 6, 7]) done.add(i);
    failed.add(8);
    const state = { doneBits: done.toBase64(), failedBits: failed.toBase64(), itemCount: 12, dispatched: 11 };
    expect(unfinishedRuns(state)).toEqual([
      [2, 5],
      [9, 11],
    ]);
    expect(unfinishedRuns({ ...state, dispatched: 0 })).toEqual([]);
  });

  it("packing again from any unit's first item gives that unit (items of any size, unsendable ones between)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.oneof(
            { weight: 9, arbitrary: fc.integer({ min: 0, max: 300 }) },
            { weight: 1, arbitrary: fc.constant(-1) },
          ),
          {
            minLength: 1,
            maxLength: 60,
          },
        ),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 200, max: 1200 }),
        fc.integer({ min: 1, max: 25 }),
        async (sizes, maxItems, maxBytes, chunkSize) => {
          const { deps, system } = world({ workUnitMaxItems: maxItems, workUnitMaxBytes: maxBytes });
          // -1: an entry that is not an item input (it cannot be sent, and ends the unit before it).
          const entries = sizes.map((size, i) => (size < 0 ? { nope: i } : { inline: `${i}:${"x".repeat(size)}` }));
          const id = "job-pack";
          for (let c = 0; c * chunkSize < entries.length; c++)
            await system.writeText(
              keys.chunk(id, c),
              JSON.stringify(entries.slice(c * chunkSize, (c + 1) * chunkSize)),
            );
          const state = jobStateSchema.parse({
            ...jobShape(id, entries.length, chunkSize),
            unitMaxItems: maxItems,
            unitMaxBytes: maxBytes,
          });
          const chunks = new ChunkCache();
          // Dispatch's packing, in passes of a random-ish budget (here 7 items), each from where the last stopped.
          const units: { first: number; message: string }[] = [];
          let cursor = 0;
          while (cursor < entries.length) {
            let next = cursor;
            for await (const piece of packUnits(deps, state, { from: cursor, until: cursor + 7, chunks })) {
              if (piece.kind === "unit") {
                units.push(piece);
                next = piece.first + piece.count;
              } else next = piece.item + 1;
            }
            if (next === cursor) break;
            cursor = next;
          }
          for (const [index, sent] of units.entries()) {
            const end = units[index + 1]?.first ?? entries.length;
            const again: string[] = [];
            for await (const piece of packUnits(deps, state, { from: sent.first, until: end, end, chunks })) {
              if (piece.kind === "unsendable") break;
              again.push(piece.message);
            }
            expect(again[0]).toBe(sent.message);
          }
        },
      ),
      { numRuns: 150, seed: 22 },
    );
  });
});

/** A running job's state as registration writes it, for packing tests. */
function jobShape(id: string, itemCount: number, chunkSize: number) {
  return {
    v: 1,
    id,
    kind: "group-by",
    params,
    status: "running",
    itemCount,
    chunkSize,
    dispatched: 0,
    doneCount: 0,
    failedCount: 0,
    doneBits: Bitmap.empty(itemCount).toBase64(),
    failedBits: Bitmap.empty(itemCount).toBase64(),
    aggregate: null,
    failures: [],
    createdAtMs: 0,
    registeredAtMs: 0,
    lastEpoch: 1,
  };
}
