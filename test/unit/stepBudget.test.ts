import { describe, expect, it } from "vitest";
import { Bitmap } from "../../src/coordination/state/bitmap";
import { keys, type JobState } from "../../src/coordination/state/jobState";
import { MAX_ACTIVE_JOBS } from "../../src/coordination/jobs/registerJobs";
import { MAX_JOBS_PER_PASS, runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, work, world } from "../support/coordinationWorld";
import type { MemoryStateStore } from "../support/MemoryStateStore";
import { fakeTerm, type MemoryFiles, type MemoryQueue } from "../support/memoryPorts";

/**
 * Issue 21, item 4: STEP_BUDGET_MS holds inside a pass. Every storage request of these tests takes 5 ms on a virtual
 * clock (the step's monotonic clock), so a pass over many jobs takes time as it does on Azure, and no test waits for
 * real time.
 */

/** A one-item job already dispatched (its result not back yet): a pass reads it and has nothing to send. */
function runningJob(id: string): JobState {
  return {
    v: 1,
    id,
    kind: "group-by",
    params,
    itemCount: 1,
    chunkSize: 1000,
    createdAtMs: 0,
    registeredAtMs: 0,
    status: "running",
    unitMaxItems: 1,
    unitMaxBytes: 45 * 1024,
    dispatched: 1,
    doneBits: Bitmap.empty(1).toBase64(),
    failedBits: Bitmap.empty(1).toBase64(),
    doneCount: 0,
    failedCount: 0,
    aggregate: [],
    failures: [],
    lastEpoch: 0,
  };
}

/**
 * A virtual clock on which every storage request of the world's ports takes `perRequestMs`: requests made one after
 * another add up, requests made at once (a group of sends, releases) take that long together.
 */
function slowStorage(
  ports: { state: MemoryStateStore; system: MemoryFiles; queues: MemoryQueue[] },
  perRequestMs = 5,
): { now: () => number; jobReads: string[] } {
  let clock = 0;
  const jobReads: string[] = [];
  const slow =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const startedAt = clock;
      const result = await call(...args);
      clock = Math.max(clock, startedAt + perRequestMs);
      return result;
    };
  const read = ports.state.read.bind(ports.state);
  ports.state.read = slow(async (key: string) => {
    const match = /^jobs\/([^/]+)\.json$/.exec(key);
    if (match?.[1] !== undefined) jobReads.push(match[1]);
    return read(key);
  });
  ports.state.write = slow(ports.state.write.bind(ports.state));
  for (const name of ["readText", "writeText", "list", "delete"] as const)
    ports.system[name] = slow(ports.system[name].bind(ports.system) as never) as never;
  for (const queue of ports.queues)
    for (const name of ["send", "receive", "peek", "release", "delete"] as const)
      queue[name] = slow(queue[name].bind(queue) as never) as never;
  return { now: () => clock, jobReads };
}

describe("the step budget holds inside a pass (issue 21, item 4)", () => {
  const ids = Array.from({ length: 600 }, (_, n) => `job-${String(n).padStart(3, "0")}`);

  async function manyRunningJobs() {
    const w = world({ dispatchBatchSize: 10, maxInFlight: 20 });
    for (const id of ids) await w.state.write(keys.jobState(id), runningJob(id), 0, { ifNoneMatch: "*" });
    await w.state.write(keys.index, { v: 1, active: ids, recent: [] }, 0, { ifNoneMatch: "*" });
    const storage = slowStorage({
      state: w.state,
      system: w.system,
      queues: [w.work, w.results, w.poison, w.resultsPoison],
    });
    return { ...w, ...storage };
  }

  it("600 running jobs, 5 ms a request, a 1,000 ms budget: the step ends within its budget plus one job's part, and reads at most a pass's bound of jobs a pass", async () => {
    const { deps, now, jobReads } = await manyRunningJobs();
    const report = await runCoordinationStep(deps, fakeTerm(1), { budgetMs: 1000, monotonicMs: now });
    // One job's part of a pass here is its read: 5 ms; the step's last index write is another 10 ms.
    expect(now()).toBeLessThanOrEqual(1000 + 50);
    expect(jobReads.length).toBeLessThanOrEqual(report.passes * 32);
    expect(report.activeJobs).toBe(600);
  });

  it("the next step (another term) resumes where the last one stopped, so every job is visited within a few steps", async () => {
    const { deps, now, jobReads } = await manyRunningJobs();
    await runCoordinationStep(deps, fakeTerm(1), { budgetMs: 1000, monotonicMs: now });
    const firstStep = new Set(jobReads);
    expect(firstStep.size).toBeLessThan(600);
    const seen = new Set(firstStep);
    jobReads.length = 0;
    await runCoordinationStep(deps, fakeTerm(2), { budgetMs: 1000, monotonicMs: now });
    // Not from the top of the list again: the second step starts with a job the first did not reach.
    expect(firstStep.has(jobReads[0] ?? "")).toBe(false);
    for (let step = 3; step <= 8 && seen.size < 600; step++) {
      for (const id of jobReads) seen.add(id);
      jobReads.length = 0;
      await runCoordinationStep(deps, fakeTerm(step), { budgetMs: 1000, monotonicMs: now });
    }
    for (const id of jobReads) seen.add(id);
    expect(seen.size).toBe(600);
  });

  it("a fold batch of results for many jobs stops between jobs once the budget is spent, and leaves the rest visible for the next step", async () => {
    const w = world({ dispatchBatchSize: 1000, maxInFlight: 1000 });
    const jobIds: string[] = [];
    for (let n = 0; n < 100; n++)
      jobIds.push((await storeSubmission(w.deps.system, { kind: "group-by", params, items: [item("a", n)] })).id);
    for (let step = 1; step <= 10 && w.work.length < 100; step++)
      await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(await work(w.deps, w.work)).toBe(100);
    const { now, jobReads } = slowStorage({
      state: w.state,
      system: w.system,
      queues: [w.work, w.results, w.poison, w.resultsPoison],
    });
    const report = await runCoordinationStep(w.deps, fakeTerm(2), { budgetMs: 200, monotonicMs: now });
    expect(now()).toBeLessThanOrEqual(200 + 50);
    expect(report.folded).toBeGreaterThan(0);
    expect(report.folded).toBeLessThan(100);
    expect(w.results.length).toBe(100 - report.folded); // the rest is back on the queue, not hidden
    expect(new Set(jobReads).size).toBeLessThan(100);
    let folded = report.folded;
    for (let step = 3; step < 40 && folded < 100; step++)
      folded += (await runCoordinationStep(w.deps, fakeTerm(step), { budgetMs: 200, monotonicMs: now })).folded;
    expect(folded).toBe(100);
  });

  it("registration of a burst of submitted jobs stops once the budget is spent; the rest wait in the inbox", async () => {
    const w = world();
    for (let n = 0; n < 50; n++)
      await storeSubmission(w.deps.system, { kind: "group-by", params, items: [item("a", n)] });
    const { now } = slowStorage({ state: w.state, system: w.system, queues: [w.work, w.results] });
    const report = await runCoordinationStep(w.deps, fakeTerm(1), { budgetMs: 100, monotonicMs: now });
    // Past the budget the pass finishes what it started and makes progress in each part once: the registered jobs'
    // markers, one fold batch, one job's dispatch, the index (some 30 requests here, whatever the inbox holds).
    expect(now()).toBeLessThanOrEqual(100 + 150);
    expect(report.registered).toBeGreaterThan(0);
    expect(report.registered).toBeLessThan(50);
    expect((await w.system.list(keys.inboxPrefix, 100)).length).toBe(50 - report.registered);
  });
});

describe("the number of active jobs is bounded (issue 21, item 4)", () => {
  it(`registers no job while ${MAX_ACTIVE_JOBS} are active: the submission waits in the inbox, pending`, async () => {
    const w = world();
    const active = Array.from({ length: MAX_ACTIVE_JOBS }, (_, n) => `active-${n}`);
    for (const id of active) await w.state.write(keys.jobState(id), runningJob(id), 0, { ifNoneMatch: "*" });
    await w.state.write(keys.index, { v: 1, active, recent: [] }, 0, { ifNoneMatch: "*" });
    const { id } = await storeSubmission(w.deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    expect((await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS)).registered).toBe(0);
    expect(await w.system.list(keys.inbox(id), 1)).toEqual([keys.inbox(id)]);
    // One ends: room for one more.
    await w.state.write(keys.jobState("active-0"), { ...runningJob("active-0"), status: "completed" }, 1, {
      ifMatch: (await w.state.read(keys.jobState("active-0")))?.etag ?? "",
    });
    // Within one round of the list (MAX_JOBS_PER_PASS a pass) the leader takes it off, and registers the new one.
    let registered = 0;
    for (let pass = 0; pass <= Math.ceil(MAX_ACTIVE_JOBS / MAX_JOBS_PER_PASS) && registered === 0; pass++)
      registered = (await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS)).registered;
    expect(registered).toBe(1);
    expect(await w.system.list(keys.inbox(id), 1)).toEqual([]);
  });
});
