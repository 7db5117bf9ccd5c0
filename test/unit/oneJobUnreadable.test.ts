import { describe, expect, it } from "vitest";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { jobIndexSchema, keys } from "../../src/coordination/state/jobState";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Issue 37.8, "no step is blocked by one job", beyond retention's refused deletes: one job's state document damaged
 * (not a job state this version reads: an operator's edit, a bad restore) while its results are on the queue. The
 * steps, and the other job, must go on.
 */
describe("one job whose state document is damaged (issue 37.8)", () => {
  it("fails no step: the other job is dispatched, folded and completed, and the damaged one stays listed", async () => {
    const made = world({ dispatchBatchSize: 100, maxInFlight: 100 });
    const { deps, state } = made;
    const submit = async (tag: string) =>
      (await storeSubmission(deps.system, { kind: "group-by", params, items: [item(tag, 1), item(tag, 2)] })).id;
    const damaged = await submit("damaged");
    const healthy = await submit("healthy");
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // registers and dispatches both
    await work(deps, made.work); // both jobs' results are on the results queue
    const stored = await state.read(keys.jobState(damaged));
    if (stored === undefined) throw new Error("expected the damaged job's state");
    await state.write(keys.jobState(damaged), { v: 99, note: "not a job state" }, 1, { ifMatch: stored.etag });

    const reports = [];
    for (let step = 0; step < 3; step++) reports.push(await runCoordinationStep(deps, fakeTerm(1), ONE_PASS));

    // Each step met the damaged job, and said so, and went on.
    for (const report of reports) expect(report.jobErrors).toBeGreaterThan(0);
    expect(made.events.filter((event) => event.type === "job-pass-failed").map((event) => event.jobId)).toContain(
      damaged,
    );

    expect((await readJob(state, healthy))?.status).toBe("completed");
    const index = jobIndexSchema.parse((await state.read(keys.index))?.value);
    expect(index.active).toEqual([damaged]);
  });
});
