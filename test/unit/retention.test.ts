import { describe, expect, it } from "vitest";
import { readSettings } from "../../src/app/settings";
import { requestCancel } from "../../src/coordination/jobs/cancel";
import { jobIndexSchema, keys } from "../../src/coordination/state/jobState";
import { readJobStatus } from "../../src/coordination/jobs/status";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Issue 21, item 5: an ended job's blobs — its state, spec, item chunks, outcome blobs, markers — are removed once it
 * has been ended for JOB_RETENTION_HOURS; until then its status reads as before, after it GET /api/jobs/{id} answers
 * 404. Nothing of it stays for ever, and the job index stays bounded.
 */
const HOUR_MS = 3_600_000;

async function endedJob(items = 3) {
  let nowMs = 1_000_000;
  const made = world({ now: () => nowMs, jobRetentionMs: 24 * HOUR_MS, dispatchBatchSize: 100, maxInFlight: 100 });
  const { deps } = made;
  const { id } = await storeSubmission(deps.system, {
    kind: "group-by",
    params,
    items: Array.from({ length: items }, (_, n) => item("a", n)),
  });
  await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
  await work(deps, made.work);
  await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // folds: completed
  await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // takes it off the active list
  return {
    ...made,
    id,
    setNow: (ms: number) => {
      nowMs = ms;
    },
  };
}

/** Every blob of the job `id` in the system container, and its state document. */
async function leftOf(made: Awaited<ReturnType<typeof endedJob>>, id: string) {
  return {
    system: (await made.system.list(`jobs/${id}/`, 10_000)).length,
    markers: (await made.system.list(keys.cancel(id), 10)).length + (await made.system.list(keys.inbox(id), 10)).length,
    state: (await made.state.read(keys.jobState(id))) !== undefined,
  };
}

describe("retention of ended jobs (issue 21, item 5)", () => {
  it("a completed job stays readable for JOB_RETENTION_HOURS, then everything of it is removed and its status is 404", async () => {
    const made = await endedJob();
    const { deps, id, state, events } = made;
    // Blobs a job leaves behind: an outcome blob, a v1 partial, the stop blob, a stale cancellation request.
    await deps.system.writeText(keys.outcome(id, 0), "{}");
    await deps.system.writeText(keys.partial(id, 1), "{}");
    await deps.system.writeText(`jobs/${id}/stop`, "{}");
    await deps.system.writeText(keys.cancel(id), "{}");
    expect((await readJobStatus(state, deps.system, deps.registry, id))?.status).toBe("completed");
    made.setNow(1_000_000 + 23 * HOUR_MS); // within the retention period: nothing goes
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect((await readJobStatus(state, deps.system, deps.registry, id))?.status).toBe("completed");
    expect((await leftOf(made, id)).system).toBeGreaterThan(0);
    made.setNow(1_000_000 + 25 * HOUR_MS);
    const report = await runCoordinationStep(deps, fakeTerm(3), ONE_PASS);
    expect(report.removedJobs).toBe(1);
    expect(await leftOf(made, id)).toEqual({ system: 0, markers: 0, state: false });
    expect(await readJobStatus(state, deps.system, deps.registry, id)).toBeUndefined();
    expect(await deps.system.list(keys.endedPrefix, 10)).toEqual([]);
    const index = jobIndexSchema.parse((await state.read(keys.index))?.value);
    expect(index.recent).not.toContain(id);
    expect(events.filter((event) => event.type === "job-removed")).toMatchObject([{ jobId: id, epoch: 3 }]);
  });

  it("a cancelled job is removed a retention period after it was cancelled", async () => {
    let nowMs = 5_000_000;
    const made = world({ now: () => nowMs, jobRetentionMs: HOUR_MS });
    const { id } = await storeSubmission(made.deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(made.deps, fakeTerm(1), ONE_PASS);
    await requestCancel(made.deps, id, { now: () => nowMs });
    await runCoordinationStep(made.deps, fakeTerm(1), ONE_PASS);
    expect((await readJobStatus(made.state, made.system, made.deps.registry, id))?.status).toBe("cancelled");
    nowMs += HOUR_MS + 1;
    await runCoordinationStep(made.deps, fakeTerm(2), ONE_PASS);
    expect(await readJobStatus(made.state, made.system, made.deps.registry, id)).toBeUndefined();
    expect(await made.system.list(`jobs/${id}/`, 10)).toEqual([]);
  });

  it("a job of many blobs is removed over several steps, each within its budget, and its marker goes last", async () => {
    const made = await endedJob(1);
    const { deps, id } = made;
    for (let n = 0; n < 3000; n++) await deps.system.writeText(keys.outcome(id, n + 1), "{}");
    let clock = 0;
    const remove = deps.system.delete.bind(deps.system);
    deps.system.delete = (name, options) => {
      clock += 1; // 1 ms a delete
      return remove(name, options);
    };
    made.setNow(1_000_000 + 25 * HOUR_MS);
    let steps = 0;
    for (; steps < 10 && (await leftOf(made, id)).state; steps++) {
      const started = clock;
      await runCoordinationStep(deps, fakeTerm(2 + steps), { budgetMs: 1000, monotonicMs: () => clock });
      expect(clock - started).toBeLessThanOrEqual(1000 + 600);
      if ((await leftOf(made, id)).state) expect((await deps.system.list(keys.endedPrefix, 10)).length).toBe(1);
    }
    expect(steps).toBeGreaterThan(1);
    expect(await leftOf(made, id)).toEqual({ system: 0, markers: 0, state: false });
    expect(await deps.system.list(keys.endedPrefix, 10)).toEqual([]);
  });
});

describe("JOB_RETENTION_HOURS (issue 21, item 5)", () => {
  it("defaults to 168 hours (7 days) and allows 1 hour to 1 year, naming itself when out of range", () => {
    expect(readSettings({}).JOB_RETENTION_HOURS).toBe(168);
    expect(readSettings({ JOB_RETENTION_HOURS: "8760" }).JOB_RETENTION_HOURS).toBe(8760);
    expect(() => readSettings({ JOB_RETENTION_HOURS: "0" })).toThrow(/JOB_RETENTION_HOURS="0" must be from 1 to 8760/);
    expect(() => readSettings({ JOB_RETENTION_HOURS: "8761" })).toThrow(/JOB_RETENTION_HOURS="8761" must be from/);
  });
});
