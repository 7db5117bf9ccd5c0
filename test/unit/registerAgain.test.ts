import { describe, expect, it } from "vitest";
import { jobIndexSchema, keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * An inbox marker for a job the leader registered before: a replay after a crash between the state's write and the
 * marker's removal, or a keyed submission's retry that wrote the marker again (`jobs/submitOnce.ts`) while the job was
 * being registered. The job must stay as it is.
 */
describe("an inbox marker for a job registered already", () => {
  it("of a job that has ended: the job is not put back on the active list, and ends only once", async () => {
    const { deps, events, state, work: queue } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed" });
    const indexOf = async () => jobIndexSchema.parse((await state.read(keys.index))?.value);
    expect((await indexOf()).active).not.toContain(id);

    await deps.system.writeText(keys.inbox(id), "");
    const report = await runCoordinationStep(deps, fakeTerm(2), { budgetMs: 60_000, maxPasses: 2 });
    expect(report.registered).toBe(0);
    expect((await indexOf()).active).not.toContain(id);
    expect(await deps.system.readText(keys.inbox(id))).toBeUndefined();
    expect(events.filter((event) => event.type === "job-completed")).toHaveLength(1);
    expect(events.filter((event) => event.type === "job-registered")).toHaveLength(1);
  });

  it("of a job still running: it stays on the active list once, and is not announced again", async () => {
    const { deps, events, state } = world({ dispatchBatchSize: 1, maxInFlight: 1 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("a", 2)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await deps.system.writeText(keys.inbox(id), "");
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(jobIndexSchema.parse((await state.read(keys.index))?.value).active).toEqual([id]);
    expect(await readJob(state, id)).toMatchObject({ status: "running", dispatched: 1 });
    expect(events.filter((event) => event.type === "job-registered")).toHaveLength(1);
  });
});
