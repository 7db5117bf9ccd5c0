import { describe, expect, it } from "vitest";
import { createRegistry } from "../../scripts/support/repoKinds";
import { requestCancel } from "../../src/coordination/jobs/cancel";
import { keys } from "../../src/coordination/state/jobState";
import { readJobStatus } from "../../src/coordination/jobs/status";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { TERMS_KEY } from "../../src/coordination/state/termHistory";
import { HOLD_PASSED_MS, ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * During a rolling deploy, instances of two versions share one storage account: a newer version's documents (a job
 * spec with one more field, a job state with one more field) meet an older leader. The older one must keep working on
 * them and keep what it does not know, never drop or corrupt them. (Found by review: a spec with one field more was
 * dropped for good — exactly what `deadlineAtMs` would have done to a leader from before it.)
 */
describe("documents written by a newer version (rolling deploy)", () => {
  it("a spec with a field this version does not know is registered, and its status can be read", async () => {
    const { deps, state, system } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    const spec = JSON.parse((await system.readText(keys.spec(id))) ?? "{}") as Record<string, unknown>;
    await system.writeText(keys.spec(id), JSON.stringify({ ...spec, priority: 5 }));
    expect((await readJobStatus(deps.state, deps.system, createRegistry(), id))?.status).toBe("pending");
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect((await readJob(state, id))?.status).toBe("running");
    expect((await readJobStatus(deps.state, deps.system, createRegistry(), id))?.status).toBe("running");
  });

  it("a spec of a newer format version waits in the inbox for a leader that reads it, and blocks no other job", async () => {
    const { deps, state, system } = world();
    const newer = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    const other = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("b", 2)] });
    const spec = JSON.parse((await system.readText(keys.spec(newer.id))) ?? "{}") as Record<string, unknown>;
    await system.writeText(keys.spec(newer.id), JSON.stringify({ ...spec, v: 3 }));
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(report.registered).toBe(1);
    expect((await readJob(state, other.id))?.status).toBe("running");
    expect(await readJob(state, newer.id)).toBeUndefined();
    expect(await system.readText(keys.inbox(newer.id))).toBeDefined();
  });

  it("a job state with a field this version does not know is worked on, and the field is kept in every write", async () => {
    const { deps, state, work: queue } = world();
    const newer = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1), item("a", 2)] });
    const other = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("b", 2)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const stored = await state.read(keys.jobState(newer.id));
    if (stored === undefined) throw new Error("not registered");
    // A newer leader's write, with a field this version does not know.
    await state.write(keys.jobState(newer.id), { ...(stored.value as object), tenantWeight: 5 }, 2, {
      ifMatch: stored.etag,
    });
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(3), ONE_PASS);
    expect(await readJob(state, other.id)).toMatchObject({ status: "completed" });
    expect((await state.read(keys.jobState(newer.id)))?.value).toMatchObject({ status: "completed", tenantWeight: 5 });
  });

  it("a term history whose entries carry a field this version does not know is extended, the field kept", async () => {
    const { deps, state } = world();
    await state.write(
      TERMS_KEY,
      { v: 1, terms: [{ holder: "newer", epoch: 1, sinceMs: 1, region: "westeurope" }] },
      1,
      {
        ifNoneMatch: "*",
      },
    );
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect((await state.read(TERMS_KEY))?.value).toMatchObject({
      terms: [{ holder: "newer", epoch: 1, region: "westeurope" }, { epoch: 2 }],
    });
  });
  it("a result of a newer format version is left on the queue for a newer leader; after an hour its unit's items fail", async () => {
    const { deps, work: queue, results, state, clock } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await queue.receive(10, 60); // the unit went to a newer worker, which answers in a format this leader does not read
    await results.send([JSON.stringify({ v: 4, jobId: id, first: 0, count: 1, done: [[0, 0]], digest: "new" })]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(results.length).toBe(1);
    expect(await readJob(state, id)).toMatchObject({ status: "running", failedCount: 0 });
    results.nowMs += 60 * 60 * 1000;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // rejected: its unit's item held
    clock.ms += HOLD_PASSED_MS;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 0, failedCount: 1 });
    expect(job?.failures[0]?.reason).toMatch(
      /format version 4, newer than this leader reads \(3\).*hour since it was sent/,
    );
  });

  it("the job index keeps a field this version does not know when it adds a job", async () => {
    const { deps, state } = world();
    // A newer leader's index, with one more field.
    await state.write(keys.index, { v: 1, active: [], recent: [], paused: ["some-job"] }, 1, { ifNoneMatch: "*" });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS); // registers the job: updateIndex({ add })
    expect((await state.read(keys.index))?.value).toMatchObject({ active: [id], paused: ["some-job"] });
  });

  it("the status of a job whose spec is of a newer format version (left in the inbox on purpose) is pending, with what can be read", async () => {
    const { deps, system } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    const spec = JSON.parse((await system.readText(keys.spec(id))) ?? "{}") as Record<string, unknown>;
    await system.writeText(keys.spec(id), JSON.stringify({ ...spec, v: 3 }));
    const status = await readJobStatus(deps.state, deps.system, createRegistry(), id);
    expect(status).toMatchObject({ id, kind: "group-by", status: "pending", progress: { total: 1 } });
    expect(status?.notice).toMatch(/format version 3.*this version reads 1 to 2/);
  });

  it("cancelling a job whose state this version cannot read is a clear answer naming why, and stores no request", async () => {
    const { deps, state } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const stored = await state.read(keys.jobState(id));
    if (stored === undefined) throw new Error("not registered");
    // A newer leader's state, with a status this version does not know.
    await state.write(keys.jobState(id), { ...(stored.value as object), status: "paused" }, 2, {
      ifMatch: stored.etag,
    });
    await expect(requestCancel(deps, id)).resolves.toEqual({
      outcome: "unreadable",
      reason: expect.stringMatching(/status.*newer version/) as unknown,
    });
    expect(await deps.system.list("cancel/", 10)).toEqual([]);
  });
});
