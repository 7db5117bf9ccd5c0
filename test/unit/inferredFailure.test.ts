import { describe, expect, it } from "vitest";
import { Bitmap } from "../../src/coordination/state/bitmap";
import { groupByView, type GroupByPartial } from "../../src/groupBy/groupBy";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * A result the leader rejects but that names items (a damaged or forged result) holds those items (issue 43: held, not
 * failed; `heldFailures.test.ts`), so a job whose worker sent garbage does not wait for ever. When it names fewer items
 * than the unit they went out in, the unit's own result comes later and reports them done: they were processed (their
 * output written), so they count as done — the failure was the leader's inference — and the unit's other items are
 * not lost with them. Found by the chaos suite (bad-input, seed 1, on a loaded machine): item 0 failed by a forged
 * result, items 1–7 failed with "its unit's result overlaps items already counted".
 */
describe("a failure inferred from a rejected result gives way to the unit's own result", () => {
  const setUp = async () => {
    const w = world({ workUnitMaxItems: 8 });
    const { id } = await storeSubmission(w.deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 8 }, (_, i) => item("a", i + 1)),
    });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS); // one unit of items 0–7 goes out
    return { ...w, id };
  };

  it.each([
    ["a result of the wrong shape", (id: string) => JSON.stringify({ v: 1, jobId: id, item: 0, ok: "yes" })],
    [
      "a result with a __proto__ key",
      (id: string) =>
        `{"__proto__":{"ok":true},${JSON.stringify({ v: 1, jobId: id, item: 0, ok: true, partial: [] }).slice(1)}`,
    ],
  ])("%s naming item 0, folded before the unit's result, leaves every item done and counted once", async (_, text) => {
    const { deps, work: queue, results, state, id } = await setUp();
    await results.send([text(id)]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // Inferred: item 0 held, with the reason; not failed.
    expect(await readJob(state, id)).toMatchObject({
      doneCount: 0,
      failedCount: 0,
      heldBits: expect.any(String) as unknown,
    });
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 8, failedCount: 0, failures: [] });
    const bits = (text: string | undefined) => Bitmap.fromBase64(text ?? "", 8);
    expect(Array.from({ length: 8 }, (_, i) => [bits(job?.doneBits).has(i), bits(job?.failedBits).has(i)])).toEqual(
      Array.from({ length: 8 }, () => [true, false]),
    );
    expect(groupByView(job?.aggregate as GroupByPartial)).toEqual({ a: { count: 8, sum: 36, min: 1, max: 8 } });
  });

  it("a unit's result overlapping an item already done still cannot be used: its partial would count that item twice", async () => {
    const { deps, work: queue, state, id } = await setUp();
    // Item 0 done on its own first (a one-item message for it, as a leader before units sent).
    const one = { v: 1, jobId: id, item: 0, kind: "group-by", params, input: item("a", 1) };
    expect((await processWorkMessage(deps, one, { id: "m0", dequeueCount: 1, maxDequeueCount: 5 })).status).toBe(
      "processed",
    );
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ doneCount: 1, failedCount: 0 });
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 1, failedCount: 7 });
    expect(job?.failures[0]?.reason).toMatch(/overlaps items already counted/);
    expect(groupByView(job?.aggregate as GroupByPartial)).toEqual({ a: { count: 1, sum: 1, min: 1, max: 1 } });
  });
});
