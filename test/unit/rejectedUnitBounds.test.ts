import { describe, expect, it } from "vitest";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";
import { heldItems } from "../../src/coordination/state/heldItems";

/** The items a job holds. */
const heldOf = (job: Awaited<ReturnType<typeof readJob>>): number[] => {
  const held = job === undefined ? undefined : heldItems(job);
  return Array.from({ length: job?.itemCount ?? 0 }, (_, item) => item).filter((item) => held?.has(item) === true);
};

/**
 * A message that names a unit without a usable outcome for it — a result the leader rejects, a worker's rejection on
 * the work poison queue — holds "its unit's items" (issue 43: they fail only if their unit's own result never comes).
 * The unit is whatever the message says (any `first`, any `count` up to 1000), so the leader holds only what such a
 * message can speak for: a unit no larger than the job's units, and of it only the items the job has sent. And a valid
 * result of the same batch is folded before any of it.
 */
describe("a message naming a unit it has no outcome for holds only what it can speak for", () => {
  /** A job of 200 items in units of 32, of which 64 items (two units) were sent. */
  async function halfSent() {
    const made = world({ workUnitMaxItems: 32, dispatchBatchSize: 64, maxInFlight: 64 });
    const { id } = await storeSubmission(made.deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 200 }, (_, i) => item("a", i)),
    });
    await runCoordinationStep(made.deps, fakeTerm(1), ONE_PASS); // units [0, 31] and [32, 63] go out
    expect(await readJob(made.state, id)).toMatchObject({ dispatched: 64 });
    return { ...made, id };
  }

  it("a bad result naming 200 items (the whole job) does not fail the other units' items, nor items not yet dispatched", async () => {
    const { deps, work: queue, results, resultsPoison, state, id } = await halfSent();
    // A result the leader cannot use (one field too many), naming items 0–199, the whole job, arrives first.
    await results.send([JSON.stringify({ v: 2, jobId: id, first: 0, count: 200, done: [], failed: [], extra: 1 })]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(resultsPoison.length).toBe(1); // rejected all the same
    await work(deps, queue); // the workers do both units correctly
    for (let step = 0; step < 10; step++) {
      await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
      await work(deps, queue);
    }
    const job = await readJob(state, id);
    // At most the one unit the message could have been the result of ([0, 31]) may fail; the rest is real work.
    expect(job?.doneCount).toBeGreaterThanOrEqual(200 - 32);
  });

  it("a bad result naming a unit's worth of items holds only those the job has sent", async () => {
    const { deps, results, state, id } = await halfSent();
    await results.send([JSON.stringify({ v: 2, jobId: id, first: 50, count: 32, done: "garbage" })]);
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(report).toMatchObject({ rejected: 1, failed: 0 });
    const job = await readJob(state, id);
    expect(job).toMatchObject({ failedCount: 0 });
    expect(heldOf(job)).toEqual(Array.from({ length: 14 }, (_, i) => 50 + i));
    expect(job?.failures.map((failure) => failure.item)).toEqual(Array.from({ length: 14 }, (_, i) => 50 + i));
  });

  it("a garbage copy of a unit's result that arrives in the same batch before the valid one does not discard the valid one", async () => {
    const { deps, work: queue, results, state } = world({ workUnitMaxItems: 4 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("a", 2), item("a", 3), item("a", 4)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await results.send([JSON.stringify({ v: 2, jobId: id, first: 0, count: 4, done: "garbage" })]);
    await work(deps, queue); // the valid result, behind it on the queue
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 4, failedCount: 0 });
  });

  it("a worker's rejection on the work poison queue naming the whole job (200 items) fails none, and goes back there with why", async () => {
    const { deps, poison, state, id } = await halfSent();
    const rejection = JSON.stringify({
      rejected: { by: "worker", reason: "garbage", messageId: "m1", atMs: 1, jobId: id, item: 0, count: 200 },
      original: "{}",
    });
    await poison.send([rejection]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "running", failedCount: 0 });
    expect(poison.length).toBe(1);
    expect(JSON.parse(poison.bodies()[0] ?? "{}")).toMatchObject({
      rejected: {
        by: "leader",
        reason: `it names 200 items (0–199), more than a unit of job "${id}" holds (32)`,
      },
    });
  });

  it("a work-poison message naming a unit larger than the job's, or items the job has not sent, holds only sent items of a unit's size", async () => {
    const { deps, poison, state, id } = await halfSent();
    const rejected = (first: number, count: number): string =>
      JSON.stringify({
        rejected: { by: "worker", reason: "garbage", messageId: "m1", atMs: 1, jobId: id, item: first, count },
        original: "{}",
      });
    await poison.send([rejected(0, 100), rejected(60, 10)]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "running", failedCount: 0 });
    expect(heldOf(job)).toEqual([60, 61, 62, 63]);
    expect(job?.failures.map((failure) => failure.item)).toEqual([60, 61, 62, 63]);
    expect(
      poison.bodies().map((body) => (JSON.parse(body) as { rejected: { reason: string } }).rejected.reason),
    ).toEqual([
      `it names 100 items (0–99), more than a unit of job "${id}" holds (32)`,
      `items 64–69 have not been sent (job "${id}" has sent items before 64)`,
    ]);
  });
});
