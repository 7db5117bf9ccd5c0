import { describe, expect, it } from "vitest";
import { groupByView, type GroupByPartial } from "../../src/groupBy/groupBy";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { requestCancel } from "../../src/coordination/jobs/cancel";
import { readJobStatus } from "../../src/coordination/jobs/status";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";
import { Bitmap } from "../../src/coordination/state/bitmap";
import { heldCount } from "../../src/coordination/state/heldItems";
import { keys } from "../../src/coordination/state/jobState";
import { heldOut } from "../../src/coordination/fold/settleHeld";

/**
 * A failure the leader infers from a message that names a unit without reporting on it — a result it cannot read
 * (forged, or damaged), a work-poison message (the host's, after its retries; or a worker's rejection) — is no proof:
 * the unit may still be running, or another copy of it (a worker's re-send on shutdown, a re-send after a lapsed term)
 * may be. Issue 43, hole 1: such a failure counted toward the job's end, so garbage naming a job's last open unit
 * ended it `completed` with those items failed, and the unit's own result was dropped as a duplicate. The failure is
 * now held: the job does not end on it until a hold has passed, and the unit's own result decides the items whatever
 * order the messages were folded in.
 */

const HOLD_MS = 600_000;
/** A received result's visibility while a leader folds it: the hold's end waits this much more. */
const RESULT_VISIBILITY_MS = 30_000;

const items = (count: number) => Array.from({ length: count }, (_, i) => item("a", i + 1));
const garbage = (jobId: string, first: number, count: number): string =>
  JSON.stringify({ v: 2, jobId, first, count, done: "all of them", failed: [] });

async function setUp(count: number, unitMaxItems: number, maxInFlight = 100) {
  const clock = { ms: 1_000_000 };
  const w = world({
    workUnitMaxItems: unitMaxItems,
    dispatchBatchSize: 100,
    maxInFlight,
    now: () => clock.ms,
    inferredFailureHoldMs: HOLD_MS,
  });
  const { id } = await storeSubmission(w.deps.system, { kind: "group-by", params, items: items(count) });
  await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS); // registered, every unit sent
  return { ...w, id, clock };
}

describe("a failure inferred from a message that names a unit is held, not final (issue 43, hole 1)", () => {
  it("garbage naming a one-item job's only unit, folded before the unit's result, does not end the job: the result that follows makes the item done", async () => {
    const { deps, work: queue, results, state, id } = await setUp(1, 1);
    await results.send([garbage(id, 0, 1)]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "running", doneCount: 0, failedCount: 0 });
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 1, failedCount: 0, failures: [] });
  });

  it("the host's poison of a unit whose copy a worker re-sent (the original's delete failed), folded before the copy's result, does not end the job", async () => {
    const { deps, work: queue, poison, state, id } = await setUp(3, 3);
    // The worker's last delivery met a shutdown and put a copy of the unit on the queue; the host's delete of the
    // original failed, so the original came back past its delivery limit and went to the poison queue as it was.
    const [original] = await queue.receive(1, 600);
    if (original?.text === undefined) throw new Error("no unit was sent");
    await queue.send([original.text]);
    await poison.send([original.text]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // folds the poison (a step's first pass)
    expect(await readJob(state, id)).toMatchObject({ status: "running", doneCount: 0, failedCount: 0 });
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 3, failedCount: 0, failures: [] });
    expect(groupByView(job?.aggregate as GroupByPartial)).toEqual({ a: { count: 3, sum: 6, min: 1, max: 3 } });
  });

  it.each([
    ["garbage for the whole unit, folded a step before the result", 4, 4, "before"],
    ["garbage for the unit's first item, folded a step before the result", 4, 1, "before"],
    ["garbage for the whole unit, in the result's batch", 4, 4, "with"],
    ["garbage for the whole unit, folded a step after the result", 4, 4, "after"],
  ] as const)("%s: the same final answer, every item done", async (_, unitSize, named, order) => {
    const { deps, work: queue, results, state, id, clock } = await setUp(8, unitSize);
    const tail = 8 - unitSize; // the job's last unit
    const fold = () => runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue, deps, 1); // every unit but the last is done first
    await fold();
    if (order === "before") {
      await results.send([garbage(id, tail, named)]);
      await fold();
      await work(deps, queue);
    } else if (order === "with") {
      await work(deps, queue);
      await results.send([garbage(id, tail, named)]);
    } else {
      await work(deps, queue);
      await fold();
      await results.send([garbage(id, tail, named)]);
    }
    await fold();
    clock.ms += HOLD_MS + RESULT_VISIBILITY_MS;
    await fold();
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 8, failedCount: 0, failures: [] });
    expect(groupByView(job?.aggregate as GroupByPartial)).toEqual({ a: { count: 8, sum: 36, min: 1, max: 8 } });
  });

  it("a job whose worker only ever sends garbage still ends: its items fail with the reason once the hold has passed, not before", async () => {
    const { deps, work: queue, results, state, id, clock } = await setUp(2, 2);
    await queue.receive(1, 600); // the worker takes the unit, and its result is garbage
    await results.send([garbage(id, 0, 2)]);
    const fold = () => runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await fold();
    const heldAt = clock.ms;
    expect(await readJob(state, id)).toMatchObject({
      status: "running",
      failedCount: 0,
      heldUntilMs: heldAt + HOLD_MS,
    });
    // What its status says meanwhile: two items held until then, with their reasons.
    const status = await readJobStatus(state, deps.system, deps.registry, id);
    expect(status).toMatchObject({
      status: "running",
      progress: { done: 0, failed: 0, held: 2 },
      heldUntil: new Date(heldAt + HOLD_MS).toISOString(),
      failures: [{ item: 0 }, { item: 1 }],
    });
    clock.ms = heldAt + HOLD_MS + RESULT_VISIBILITY_MS - 1;
    await fold();
    expect(await readJob(state, id)).toMatchObject({ status: "running" });
    clock.ms = heldAt + HOLD_MS + RESULT_VISIBILITY_MS;
    await fold();
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 0, failedCount: 2 });
    expect(job?.failures.map((failure) => failure.reason)).toEqual([
      expect.stringMatching(/^the leader rejected its unit's result: /),
      expect.stringMatching(/^the leader rejected its unit's result: /),
    ]);
    expect(job?.heldBits).toBeUndefined();
  });

  it("items held while their unit waits on its job's resend list (a limited job's unit given back, waiting for a share) are not failed when the hold has passed", async () => {
    // Found by the simulator (`npm run simulate -- --seed 20261301`, noDoneItemFailedLater): a forged result named a
    // unit of a job under limits; the unit's copy was shut down on its last delivery and went back to the leader, and
    // waited on the resend list for its kind's pool (a burst of jobs held it) past the hold — its item failed though
    // its unit was still to run, and its result would have come; and, with that mended, as soon as it was granted.
    const { deps, results, state, id, clock } = await setUp(2, 2);
    await results.send([garbage(id, 0, 2)]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const held = await readJob(state, id);
    if (held === undefined) throw new Error("no job");
    expect(held).toMatchObject({ status: "running", failedCount: 0 });
    const after = held.heldUntilMs === undefined ? clock.ms : held.heldUntilMs + RESULT_VISIBILITY_MS + 1;
    expect(heldOut({ ...held, resend: [{ first: 0, count: 2, regrants: 1 }] }, after, after)).toBeUndefined();
    // Nor once it has its new grant and may be running (the grant's expiry puts it back on the list).
    expect(heldOut(held, after, after, [{ first: 0, count: 2 }])).toBeUndefined();
    // Not on the resend list: its time has come, as before.
    expect(heldOut(held, after, after)).toMatchObject({ status: "completed", failedCount: 2 });
  });

  it("held items do not count as in flight: the job's items past a full window are still sent, so the job can end and fail them", async () => {
    // Found by the simulator (seed 20262103, everyJobEnds, CI's own batch): issue 42's shared window counted held
    // items as in flight, as dispatch.ts had stopped doing; a job whose window was all held never sent its last item,
    // and held items fail only when the job has nothing else left, so it never ended.
    const { deps, work: queue, results, state, id, clock } = await setUp(4, 2, 2);
    expect(await readJob(state, id)).toMatchObject({ dispatched: 2 }); // the window is full
    for (const unit of await queue.receive(32, 600)) await queue.delete(unit); // its process died: never reported
    await results.send([garbage(id, 0, 2)]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "running", dispatched: 4 });
    await work(deps, queue); // items 2 and 3
    clock.ms += HOLD_MS + RESULT_VISIBILITY_MS + 1;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 2, failedCount: 2 });
  });

  it("a job cancelled while items are held counts them as skipped, not failed, and keeps no reason for them", async () => {
    const { deps, results, state, id } = await setUp(4, 2);
    await results.send([garbage(id, 2, 2)]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await requestCancel(deps, id)).toEqual({ outcome: "requested", id });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "cancelled", doneCount: 0, failedCount: 0, skippedCount: 4, failures: [] });
    expect(job?.heldBits).toBeUndefined();
  });

  it("a re-send after a lapsed term sends the unit whose item garbage failed whole, not split around it (suspicion 1)", async () => {
    const { deps, work: queue, results, state, id } = await setUp(8, 4);
    // Both units are held by a worker that dies; garbage names item 5, in the middle of the unit of items 4–7.
    const held = await queue.receive(2, 600);
    expect(held).toHaveLength(2);
    await results.send([garbage(id, 5, 1)]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await runCoordinationStep(deps, fakeTerm(2, "leader-2", "lapsed"), ONE_PASS);
    // The two units as first sent (held by the dead worker), and each sent again whole.
    const units = queue.bodies().map((body) => JSON.parse(body) as { first: number; inputs: unknown[] });
    expect(units.map((unit) => [unit.first, unit.inputs.length]).sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0))).toEqual([
      [0, 4],
      [0, 4],
      [4, 4],
      [4, 4],
    ]);
    // The dead worker's units come back too (their visibility ran out): all copies are worked, in any order.
    for (const message of held) await queue.release(message);
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 8, failedCount: 0, failures: [] });
    expect(groupByView(job?.aggregate as GroupByPartial)).toEqual({ a: { count: 8, sum: 36, min: 1, max: 8 } });
  });

  it("an item a leader of the version before holding counted meanwhile (a rolling deploy) is no longer held, nor counted twice", async () => {
    const { deps, results, state, id, clock } = await setUp(2, 2);
    await results.send([garbage(id, 0, 2)]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const held = await readJob(state, id);
    if (held?.heldBits === undefined) throw new Error("nothing was held");
    // The older leader folds a garbage copy naming item 0 as it did: failed at once, `heldBits` kept as a field it does
    // not know.
    const failedBits = Bitmap.empty(2);
    failedBits.add(0);
    const stored = await state.read(keys.jobState(id));
    await state.write(keys.jobState(id), { ...held, failedBits: failedBits.toBase64(), failedCount: 1 }, 1, {
      ifMatch: stored?.etag ?? "",
    });
    expect(heldCount({ ...held, failedBits: failedBits.toBase64() })).toBe(1);
    clock.ms += HOLD_MS + RESULT_VISIBILITY_MS;
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 0, failedCount: 2 });
  });
});
