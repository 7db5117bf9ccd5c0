import { describe, expect, it } from "vitest";
import { surfaceInS, IDLE_STEP_SURFACE_S } from "../../src/app/leaderStep";
import { readJobStatus } from "../../src/coordination/jobs/status";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { jobIndexSchema, jobSpecSchema, keys } from "../../src/coordination/state/jobState";
import { fairnessKeyDigest } from "../../src/coordination/state/jobSchedule";
import { hasEnded, type JobStatus } from "../../src/coordination/state/jobStatus";
import { runCoordinationStep, type StepReport } from "../../src/coordination/step/step";
import { createRegistry } from "../../scripts/support/repoKinds";
import { readJobs, type StatusSources } from "../../src/app/statusJobs";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Priority, fairness between tenants, the dispatch window shared by every job, and not-before, through the leader's
 * real step on in-memory ports (units of one item, as `world()` makes them). docs/how-to/limit.md.
 */

const items = (count: number, key = "a") => Array.from({ length: count }, (_, i) => item(key, i));

/** A world at `nowMs` with one job of 2 items that may start only an hour later, registered by one pass. */
async function waitingJob(nowMs: number) {
  const w = world({ now: () => nowMs });
  const later = await storeSubmission(w.deps.system, {
    kind: "group-by",
    params,
    items: items(2),
    notBefore: new Date(nowMs + 3_600_000).toISOString(),
  });
  return { w, later };
}

/** Which job each work message on the queue belongs to, in queue order. */
function jobsOnQueue(bodies: string[]): string[] {
  return bodies.map((body) => (JSON.parse(body) as { jobId: string }).jobId);
}

describe("priority and fairness between jobs (the leader's step, in-memory ports)", () => {
  it("a priority-1 job submitted behind a running priority-5 job gets the window's freed room before it", async () => {
    const w = world({ dispatchBatchSize: 10, maxInFlight: 10, maxInFlightTotal: 10 });
    const big = await storeSubmission(w.deps.system, { kind: "group-by", params, items: items(100) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(w.work.length).toBe(10);
    const urgent = await storeSubmission(w.deps.system, {
      kind: "group-by",
      params,
      items: items(6, "u"),
      priority: 1,
    });
    // Registered, but the window is full: nothing more goes out.
    expect((await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS)).dispatched).toBe(0);
    await work(w.deps, w.work, w.deps, 4); // 4 of the big job's items done: room for 4
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect((await readJob(w.state, urgent.id))?.dispatched).toBe(4);
    expect((await readJob(w.state, big.id))?.dispatched).toBe(10);
    await work(w.deps, w.work, w.deps, 6);
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    // The urgent job's last 2, then the big job's next 4.
    expect((await readJob(w.state, urgent.id))?.dispatched).toBe(6);
    expect((await readJob(w.state, big.id))?.dispatched).toBe(14);
  });

  it("a tenant with one small job is not starved by a tenant with five large ones: its items go out within one round", async () => {
    const w = world({ dispatchBatchSize: 12, maxInFlight: 12, maxInFlightTotal: 12, workUnitMaxItems: 1 });
    for (let job = 0; job < 5; job++)
      await storeSubmission(w.deps.system, { kind: "group-by", params, items: items(200), fairnessKey: "tenant-a" });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const small = await storeSubmission(w.deps.system, {
      kind: "group-by",
      params,
      items: items(3, "s"),
      fairnessKey: "tenant-b",
    });
    // The workers take the oldest units first; after each batch, the leader refills the window.
    const sentBefore: number[] = [];
    for (let round = 0; round < 10 && (await readJob(w.state, small.id))?.dispatched !== 3; round++) {
      await work(w.deps, w.work, w.deps, 4);
      await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
      sentBefore.push(jobsOnQueue(w.work.bodies()).filter((id) => id !== small.id).length);
    }
    expect((await readJob(w.state, small.id))?.dispatched).toBe(3);
    // Tenant b's 3 items went out in the first refills, not after tenant a's thousand.
    expect(sentBefore.length).toBeLessThanOrEqual(2);
  });

  it("jobs of one tenant share its turn round robin; the window holds at most its size over all jobs", async () => {
    const w = world({ dispatchBatchSize: 30, maxInFlight: 20, maxInFlightTotal: 30, workUnitMaxItems: 5 });
    const ids: string[] = [];
    for (let job = 0; job < 3; job++)
      ids.push(
        (await storeSubmission(w.deps.system, { kind: "group-by", params, items: items(100), fairnessKey: "t" })).id,
      );
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const dispatched = await Promise.all(ids.map(async (id) => (await readJob(w.state, id))?.dispatched ?? 0));
    // 30 over all jobs (each alone could take 20): a quantum of 5 each turn, one job after the other.
    expect(dispatched).toEqual([10, 10, 10]);
    expect(w.work.length).toBe(6); // units of 5
  });
});

describe("not before (the leader's step, in-memory ports)", () => {
  it("a job is not dispatched before its notBefore; a step with only such jobs ends at its first pass with nothing to do, saying when the first is due", async () => {
    let nowMs = 1_000_000;
    const w = world({ now: () => nowMs });
    const notBefore = new Date(nowMs + 60_000).toISOString();
    const later = await storeSubmission(w.deps.system, { kind: "group-by", params, items: items(3), notBefore });
    const report = await runCoordinationStep(w.deps, fakeTerm(1), { budgetMs: 60_000 });
    // The pass that registered it, then one that found nothing to do.
    expect(report).toMatchObject({ passes: 2, registered: 1, dispatched: 0, activeJobs: 1, scheduledJobs: 1 });
    expect(report.nextDueAtMs).toBe(nowMs + 60_000);
    expect(await readJobStatus(w.state, w.system, createRegistry(), later.id, { now: () => nowMs })).toMatchObject({
      status: "scheduled",
      notBefore,
    });
    // This step moved the job on (registered it): the next comes soon. That one only looks: its sentinel starts the
    // step after it when the job is due (at most IDLE_STEP_SURFACE_S on: then it looks again).
    expect(surfaceInS(report, nowMs)).toBeUndefined();
    const idle = await runCoordinationStep(w.deps, fakeTerm(1), { budgetMs: 60_000 });
    expect(idle).toMatchObject({ passes: 1, dispatched: 0, scheduledJobs: 1 });
    expect(surfaceInS(idle, nowMs)).toBe(IDLE_STEP_SURFACE_S);
    expect(surfaceInS(idle, nowMs + 58_200)).toBe(2);

    nowMs += 59_999;
    expect((await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS)).dispatched).toBe(0);
    nowMs += 1;
    expect((await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS)).dispatched).toBe(3);
    expect(await readJobStatus(w.state, w.system, createRegistry(), later.id, { now: () => nowMs })).toMatchObject({
      status: "running",
    });
  });

  it("the status page lists a job waiting for its notBefore as scheduled", async () => {
    const { w, later } = await waitingJob(Date.now());
    const now = await storeSubmission(w.deps.system, { kind: "group-by", params, items: items(2) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const sources = { state: w.state, system: w.system, registry: createRegistry() } as unknown as StatusSources;
    const lists = await readJobs(sources, (_what, read) => read(), {});
    const byId = (a: { id: string }, b: { id: string }) => a.id.localeCompare(b.id);
    expect(lists.active.map(({ id, status }) => ({ id, status })).sort(byId)).toEqual(
      [
        { id: later.id, status: "scheduled" },
        { id: now.id, status: "running" },
      ].sort(byId),
    );
  });

  it("a scheduled job has not ended: every waiter (client, CLI, local host, testing cluster) keeps waiting", () => {
    expect(["pending", "scheduled", "running"].filter((status) => hasEnded(status as JobStatus["status"]))).toEqual([]);
    expect(["completed", "failed", "cancelled", "expired"].every((s) => hasEnded(s as JobStatus["status"]))).toBe(true);
  });

  it("a job waiting for its notBefore holds up no other job, and is not read until it is due", async () => {
    const { w, later } = await waitingJob(1_000_000);
    const now = await storeSubmission(w.deps.system, { kind: "group-by", params, items: items(2) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    await work(w.deps, w.work);
    const reads: string[] = [];
    const read = w.state.read.bind(w.state);
    w.state.read = (key) => {
      reads.push(key);
      return read(key);
    };
    // A new step (a new term): it knows nothing of the waiting job, and reads nothing of it.
    const report = await runCoordinationStep(w.deps, fakeTerm(2), { budgetMs: 60_000 });
    expect(await readJob(w.state, now.id)).toMatchObject({ status: "completed" });
    expect(report).toMatchObject({ activeJobs: 1, scheduledJobs: 1 });
    expect(reads).toContain(keys.jobState(now.id));
    expect(reads).not.toContain(keys.jobState(later.id));
  });

  it("a cancelled job that waits for its notBefore ends at once", async () => {
    const { w, later } = await waitingJob(1_000_000);
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    await w.system.writeText(keys.cancel(later.id), "");
    const report = await runCoordinationStep(w.deps, fakeTerm(1), { budgetMs: 60_000 });
    expect(await readJob(w.state, later.id)).toMatchObject({ status: "cancelled", skippedCount: 2 });
    expect(report).toMatchObject({ activeJobs: 0, scheduledJobs: 0 });
  });
});

describe("the format of a job that uses a scheduling field (mixed versions)", () => {
  it("writes its spec and state as version 2, and its scheduling into the index; a plain job stays version 1", async () => {
    const nowMs = 1_000_000;
    const w = world({ now: () => nowMs });
    const plain = await storeSubmission(w.deps.system, { kind: "group-by", params, items: items(1), priority: 5 });
    const cases = {
      priority: { priority: 2 },
      fairnessKey: { fairnessKey: "tenant-ü" },
      notBefore: { notBefore: new Date(nowMs + 1000).toISOString() },
      idempotencyKey: { idempotencyKey: "k-1" },
    };
    const stored: Record<string, string> = {};
    for (const [name, fields] of Object.entries(cases))
      stored[name] = (
        await storeSubmission(w.deps.system, { kind: "group-by", params, items: items(1), ...fields })
      ).id;
    const specOf = async (id: string) =>
      jobSpecSchema.parse(JSON.parse((await w.system.readText(keys.spec(id))) ?? "{}"));
    expect(await specOf(plain.id)).not.toHaveProperty("priority");
    expect((await specOf(plain.id)).v).toBe(1);
    for (const id of Object.values(stored)) expect((await specOf(id)).v).toBe(2);
    expect(await specOf(stored.fairnessKey ?? "")).toMatchObject({ fairnessKey: "tenant-ü" });
    expect(await specOf(stored.notBefore ?? "")).toMatchObject({ notBeforeAtMs: nowMs + 1000 });

    // The idempotency key's job has no claim (it was stored without one here): the leader leaves it unregistered.
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect((await readJob(w.state, plain.id))?.v).toBe(1);
    expect((await readJob(w.state, stored.priority ?? ""))?.v).toBe(2);
    expect(await readJob(w.state, stored.priority ?? "")).toMatchObject({ priority: 2 });
    const index = jobIndexSchema.parse((await w.state.read(keys.index))?.value);
    expect(index.schedule).toEqual({
      [stored.priority ?? ""]: { priority: 2 },
      [stored.fairnessKey ?? ""]: { fairnessKeyDigest: fairnessKeyDigest("tenant-ü") },
      [stored.notBefore ?? ""]: { notBeforeAtMs: nowMs + 1000 },
    });
  });

  it("an index entry this version cannot read schedules its job with the defaults", async () => {
    const w = world();
    const job = await storeSubmission(w.deps.system, { kind: "group-by", params, items: items(2), priority: 9 });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const index = await w.state.read(keys.index);
    if (index === undefined) throw new Error("no index");
    const damaged = { ...(index.value as object), schedule: { [job.id]: { priority: "high", notBeforeAtMs: [] } } };
    await w.state.write(keys.index, damaged, index.epoch, { ifMatch: index.etag });
    await work(w.deps, w.work);
    const report: StepReport = await runCoordinationStep(w.deps, fakeTerm(1), { budgetMs: 60_000 });
    expect(report.jobErrors).toBe(0);
    expect(await readJob(w.state, job.id)).toMatchObject({ status: "completed" });
  });
});
