import { describe, expect, it } from "vitest";
import { renderStatusPage } from "../../src/app/renderStatusPage";
import { readStatusView } from "../../src/app/statusView";
import { jobIndexSchema, keys } from "../../src/coordination/state/jobState";
import { readJobStatus } from "../../src/coordination/jobs/status";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, work, world } from "../support/coordinationWorld";
import { FakeLeaseStore } from "../support/FakeLeaseStore";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Issue 37, hole 3: one blob retention cannot delete (a legal hold, an immutability policy: 409 on every try) must not
 * stop the coordinator. Before, the step's first pass threw on it, before it recorded which jobs had ended, and so did
 * every later step. Now that job is reported (`job-removal-failed`) and tried again after a back-off, and the step, the
 * other jobs' removal and the pass's bookkeeping go on. (Snapshots, which Azurite models, are in
 * test/integration/retentionSnapshots.test.ts; Azurite models no legal hold, so the fake answers the 409 here.)
 */
const HOUR_MS = 3_600_000;
const START_MS = 1_000_000;

async function twoEndedJobs() {
  let nowMs = START_MS;
  const made = world({ now: () => nowMs, jobRetentionMs: 24 * HOUR_MS, dispatchBatchSize: 100, maxInFlight: 100 });
  const { deps } = made;
  const submit = async (tag: string) =>
    (await storeSubmission(deps.system, { kind: "group-by", params, items: [item(tag, 1), item(tag, 2)] })).id;
  const held = await submit("held");
  const free = await submit("free");
  await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
  await work(deps, made.work);
  await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // folds: completed
  await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // takes both off the active list
  return {
    ...made,
    held,
    free,
    submit,
    setNow: (ms: number) => {
      nowMs = ms;
    },
  };
}

describe("retention that cannot delete a blob (issue 37, hole 3)", () => {
  it("reports the job and retries it with a back-off; the step, the other job's removal and the ended jobs go on", async () => {
    const made = await twoEndedJobs();
    const { deps, state, system, events, held, free } = made;
    const heldBlob = keys.outcome(held, 0);
    await system.writeText(heldBlob, "{}");
    system.legalHolds.add(heldBlob);
    // A third job, whose last result is folded in the same step that meets the held blob.
    const third = await made.submit("third");
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    await work(deps, made.work);

    made.setNow(START_MS + 25 * HOUR_MS);
    const report = await runCoordinationStep(deps, fakeTerm(3), ONE_PASS);
    expect(report.removedJobs).toBe(1);
    expect(report.completedJobs).toEqual([third]);
    expect(await readJobStatus(state, system, deps.registry, free)).toBeUndefined();
    expect((await readJobStatus(state, system, deps.registry, held))?.status).toBe("completed");
    const index = jobIndexSchema.parse((await state.read(keys.index))?.value);
    expect(index.active).toEqual([]); // the third job ended and left the active list in the same pass
    const failures = events.filter((event) => event.type === "job-removal-failed");
    expect(failures).toEqual([
      expect.objectContaining({
        jobId: held,
        epoch: 3,
        attempts: 1,
        retryAtMs: START_MS + 26 * HOUR_MS,
        error: expect.stringContaining("409 BlobImmutableDueToLegalHold") as unknown,
      }),
    ]);
    // The status page shows it: which job, how often, when it is tried again, and why.
    const view = await readStatusView({
      leaseStore: new FakeLeaseStore(),
      state,
      system,
      registry: deps.registry,
      workPoisonQueue: made.poison,
      resultsPoisonQueue: made.resultsPoison,
    });
    expect(view.retention).toEqual({
      failures: [
        {
          id: held,
          endedAt: expect.any(String) as unknown,
          attempts: 1,
          retryAt: new Date(START_MS + 26 * HOUR_MS).toISOString(),
          error: expect.stringContaining("409 BlobImmutableDueToLegalHold") as unknown,
        },
      ],
      more: false,
    });
    expect(renderStatusPage(view, { nonce: "n" })).toContain(`data-removal-of="${held}"`);
    const tries = (): number => system.deletes.get(heldBlob) ?? 0;
    expect(tries()).toBe(1);

    // Within the back-off: not tried again, however many steps run.
    made.setNow(START_MS + 25.9 * HOUR_MS);
    await runCoordinationStep(deps, fakeTerm(4), ONE_PASS);
    expect(tries()).toBe(1);
    // Due again: tried, refused again, and the back-off doubles.
    made.setNow(START_MS + 26 * HOUR_MS + 1);
    await runCoordinationStep(deps, fakeTerm(5), ONE_PASS);
    expect(tries()).toBe(2);
    expect(events.filter((event) => event.type === "job-removal-failed").at(-1)).toMatchObject({
      jobId: held,
      attempts: 2,
      retryAtMs: START_MS + 28 * HOUR_MS + 1,
    });
    // The hold is lifted: the next try removes everything of the job, and nothing of its retention is left.
    system.legalHolds.clear();
    made.setNow(START_MS + 28 * HOUR_MS + 2);
    expect((await runCoordinationStep(deps, fakeTerm(6), ONE_PASS)).removedJobs).toBe(1);
    expect(await readJobStatus(state, system, deps.registry, held)).toBeUndefined();
    expect(await system.list(`jobs/${held}/`, 10)).toEqual([]);
    expect((await system.list("", 100)).filter((name) => name.includes(held))).toEqual([]); // no marker either
    expect(events.filter((event) => event.type === "job-removed").map((event) => event.jobId)).toEqual([free, held]);
  });
});
