import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, readJob, world } from "../support/coordinationWorld";
import { runOnHeap } from "../support/heapChild";
import { fakeTerm } from "../support/memoryPorts";

/**
 * A result's ranges are checked against its unit before they are expanded into items: a small message naming
 * millions of items (or the same items many times) is rejected with the reason, and the leader's memory never
 * depends on what a message claims.
 */
describe("a result message's item ranges", () => {
  it("a ~60-byte result naming 10,000,001 items four times is rejected to the results poison queue; the leader survives on a 256 MB heap", () => {
    expect(runOnHeap(resolve(__dirname, "resultRanges.child.ts"), 256, [4], { timeoutMs: 120_000 })).toEqual({
      status: 0,
      signal: null,
      stdout: expect.stringMatching(/results-poison 1$/) as unknown,
      oom: false,
    });
  });

  it.each([
    ["a range past its unit", { done: [[0, 1]], count: 1 }, /items 0–1 are not all in its unit \(items 0–0\)/],
    ["a failed range before its unit", { first: 1, failed: [{ items: [[0, 1]], reason: "x" }] }, /items 0–1/],
    [
      "the same item twice",
      { count: 2, done: [[0, 1]], failed: [{ items: [[1, 1]], reason: "x" }] },
      /named twice|some twice/,
    ],
    ["overlapping ranges", { count: 3, done: Array.from({ length: 500 }, () => [0, 2]) }, /named twice|some twice/],
  ])("%s is rejected with the reason, and nothing is counted", async (_name, fields, reason) => {
    const { deps, results, resultsPoison, state } = world({ workUnitMaxItems: 3 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("b", 2), item("c", 3)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await results.send([JSON.stringify({ v: 2, jobId: id, first: 0, count: 1, ...fields })]);
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(report).toMatchObject({ rejected: 1, folded: 0 });
    const [rejection] = resultsPoison.bodies();
    expect((JSON.parse(rejection ?? "{}") as { rejected: { reason: string } }).rejected.reason).toMatch(reason);
    expect(await readJob(state, id)).toMatchObject({ doneCount: 0 });
  });
});
