import { describe, expect, it } from "vitest";
import { keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { ONE_PASS, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Issue 37, item 6c: a late duplicate unit of a job that retention has removed (its stop blob went with it, so the
 * worker does not know to stop) writes its outcome blob under `jobs/<id>/outcomes/`, then sends its result; the leader
 * finds no job and rejects the result to the poison queue — and nothing ever deleted the blob (retention had finished
 * with the job). Now the leader deletes the blob such a result names as it rejects it.
 */
describe("an outcome blob of a job already removed (issue 37, item 6c)", () => {
  it("is deleted as the leader rejects the result that names it", async () => {
    const made = world();
    const id = "removed-job";
    const blob = keys.outcome(id, 0);
    await made.system.writeText(blob, JSON.stringify({ done: [[0, 999]], partial: {}, failed: [] }));
    await made.results.send([JSON.stringify({ v: 2, jobId: id, first: 0, count: 1000, outcomeBlob: blob })]);
    await runCoordinationStep(made.deps, fakeTerm(1), ONE_PASS);
    expect(await made.resultsPoison.peek(32)).toHaveLength(1); // rejected, with why, as before
    expect(await made.system.list(`jobs/${id}/`, 10)).toEqual([]);
  });
});
