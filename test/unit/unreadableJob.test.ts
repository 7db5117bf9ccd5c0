import { describe, expect, it } from "vitest";
import { keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { LeadershipLostError, StorageError } from "../../src/library/errors";
import type { StateStore } from "../../src/library/fencing/StateStore";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * One job whose state document the leader cannot read (damaged, or of a shape a newer version wrote) is isolated in
 * every part of a pass that reads it — its read, expiry and dispatch, the poison peek and claim, the results fold: its
 * messages are left for later, it is reported (`job-pass-failed`), and the other jobs go on. README: "One job's trouble
 * in a pass — storage refusing its send, its document unreadable — does not hold up the others". A job-state read error
 * is never blamed on a message.
 */

type World = ReturnType<typeof world>;

/**
 * Two jobs registered and partly dispatched — the good one 10 of its 40 items (its in-flight limit), the bad one both
 * of its items — and worked: the results of both are on the queue. Returns their ids.
 */
async function twoJobs(w: World): Promise<{ good: string; bad: string }> {
  const good = await storeSubmission(w.deps.system, {
    kind: "group-by",
    params,
    items: Array.from({ length: 40 }, (_, i) => item("a", i)),
  });
  const bad = await storeSubmission(w.deps.system, { kind: "group-by", params, items: [item("b", 1), item("b", 2)] });
  await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
  expect(await readJob(w.state, bad.id)).toMatchObject({ dispatched: 2 });
  expect(await readJob(w.state, good.id)).toMatchObject({ dispatched: 10 });
  await work(w.deps, w.work);
  return { good: good.id, bad: bad.id };
}

/** Two jobs as {@link twoJobs} makes them, in a world where the good one's results free room for more dispatch. */
function twoJobWorld(): World {
  return world({ dispatchBatchSize: 20, maxInFlight: 10 });
}

/** Makes job `id`'s state a document this version does not read (a newer version's status, say). */
async function reshape(w: World, id: string): Promise<void> {
  const stored = await w.state.read(keys.jobState(id));
  if (stored === undefined) throw new Error("no job state");
  await w.state.write(keys.jobState(id), { ...(stored.value as object), status: "paused" }, stored.epoch, {
    ifMatch: stored.etag,
  });
}

/** A state store whose one document is damaged, as BlobStateStore reports a blob that is not JSON. */
function damaged(inner: StateStore, key: string): StateStore {
  return {
    read: (k, o) =>
      k === key
        ? Promise.reject(new StorageError("CorruptState", undefined, `State ${k} is not valid JSON (simulated)`))
        : inner.read(k, o),
    readSummary: (k, o) =>
      k === key
        ? Promise.reject(new StorageError("CorruptState", undefined, `State ${k} is not valid JSON (simulated)`))
        : inner.readSummary(k, o),
    delete: (k, c, o) => inner.delete(k, c, o),
    write: (k, v, e, c, o) => inner.write(k, v, e, c, o),
  };
}

/** `count` steps a minute apart on the queues' clocks, each followed by the workers: how each step ended. */
async function steps(w: World, deps: World["deps"], count: number): Promise<string[]> {
  const outcomes: string[] = [];
  for (let step = 0; step < count; step++) {
    for (const queue of [w.results, w.poison, w.work]) queue.nowMs += 60_000;
    outcomes.push(
      await runCoordinationStep(deps, fakeTerm(1), ONE_PASS).then(
        () => "completed",
        (error: unknown) => `threw: ${error instanceof Error ? error.message : String(error)}`,
      ),
    );
    await work(w.deps, w.work);
  }
  return outcomes;
}

/** The bad job's results on the results queue. */
function resultsOf(w: World, id: string): string[] {
  return w.results.bodies().filter((body) => body.includes(id));
}

/** The `job-pass-failed` events of job `id`. */
function passFailures(w: World, id: string): unknown[] {
  return w.events.filter((event) => event.type === "job-pass-failed" && event.jobId === id);
}

describe("a job whose state the leader cannot read is isolated in every part of a pass", () => {
  it("an unreadable job is reported once per pass (job-pass-failed), and the other job's results fold and it dispatches more", async () => {
    const w = twoJobWorld();
    const { good, bad } = await twoJobs(w);
    await reshape(w, bad);
    const report = await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(report.jobErrors).toBe(1);
    expect(passFailures(w, bad)).toHaveLength(1);
    expect(await readJob(w.state, good)).toMatchObject({ doneCount: 10, dispatched: 20 });
  });

  it("a poison message naming the unreadable job fails no step: it stays on the poison queue, visible, and the other job goes on", async () => {
    const w = twoJobWorld();
    const { good, bad } = await twoJobs(w);
    // One of the bad job's work messages exhausted its retries before its document became unreadable.
    const poisoned = JSON.stringify({ v: 2, jobId: bad, first: 0, kind: "group-by", params, inputs: [item("b", 1)] });
    await w.poison.send([poisoned]);
    await reshape(w, bad);
    expect(await steps(w, w.deps, 5)).toEqual(Array(5).fill("completed"));
    expect(await readJob(w.state, good)).toMatchObject({ status: "completed", doneCount: 40 });
    expect(w.poison.bodies()).toEqual([poisoned]);
    expect(await w.poison.peek(32)).toHaveLength(1);
    expect(passFailures(w, bad).length).toBeGreaterThanOrEqual(5);
  });

  it("a poison message naming the unreadable job does not hold up another job's poison received with it", async () => {
    const w = twoJobWorld();
    const { good, bad } = await twoJobs(w);
    const unit = (jobId: string): string =>
      JSON.stringify({ v: 2, jobId, first: 1, kind: "group-by", params, inputs: [item("x", 1)] });
    // Item 15 of the good job is sent (but not done) when its unit is poisoned.
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(w.state, good)).toMatchObject({ dispatched: 20, doneCount: 10 });
    const [claimable, unclaimable] = [unit(good).replace('"first":1', '"first":15'), unit(bad)];
    await w.poison.send([unclaimable, claimable]);
    await reshape(w, bad);
    expect(await steps(w, w.deps, 1)).toEqual(["completed"]);
    expect((await readJob(w.state, good))?.failures).toEqual([expect.objectContaining({ item: 15 })]);
    expect(w.poison.bodies()).toEqual([unclaimable]);
    expect(await w.poison.peek(32)).toHaveLength(1); // released at once
  });

  it("results of a job whose state blob is damaged fail no step, past the 10-delivery bound, and the other job goes on", async () => {
    const w = twoJobWorld();
    const { good, bad } = await twoJobs(w);
    // Its state blob is found damaged while its results are on the queue.
    const deps = { ...w.deps, state: damaged(w.state, keys.jobState(bad)) };
    const results = resultsOf(w, bad);
    expect(results).toHaveLength(2);
    expect(await steps(w, deps, 12)).toEqual(Array(12).fill("completed"));
    expect(await readJob(w.state, good)).toMatchObject({ status: "completed", doneCount: 40 });
    expect({ results: resultsOf(w, bad), poison: w.resultsPoison.length }).toEqual({ results, poison: 0 });
    expect(passFailures(w, bad)[0]).toMatchObject({
      error: expect.stringMatching(/is not valid JSON \(simulated\)/) as unknown,
    });
  });

  it("results of a job whose state this version cannot parse are never rejected, and fold once it can be read again", async () => {
    const w = twoJobWorld();
    const { good, bad } = await twoJobs(w);
    const stored = await w.state.read(keys.jobState(bad));
    await reshape(w, bad);
    expect(await steps(w, w.deps, 12)).toEqual(Array(12).fill("completed"));
    expect(await readJob(w.state, good)).toMatchObject({ status: "completed", doneCount: 40 });
    expect({ results: resultsOf(w, bad).length, poison: w.resultsPoison.length }).toEqual({ results: 2, poison: 0 });
    // The newer shape is gone again (a rolling deploy rolled back, say): its results fold, nothing failed.
    const now = await w.state.read(keys.jobState(bad));
    if (stored === undefined || now === undefined) throw new Error("no job state");
    await w.state.write(keys.jobState(bad), stored.value, now.epoch, { ifMatch: now.etag });
    expect(await steps(w, w.deps, 1)).toEqual(["completed"]);
    expect(await readJob(w.state, bad)).toMatchObject({ status: "completed", doneCount: 2, failedCount: 0 });
  });

  it("losing leadership while a job's state is read still ends the step, and blames no message", async () => {
    const w = twoJobWorld();
    const { bad } = await twoJobs(w);
    const term = fakeTerm(1);
    const deps = {
      ...w.deps,
      state: {
        read: (k: string) => {
          if (k !== keys.jobState(bad)) return w.state.read(k);
          term.end(); // the lease was lost while this read was under way: it rejects with the signal's reason
          return Promise.reject(term.signal.reason as Error);
        },
        readSummary: w.state.readSummary.bind(w.state),
        delete: w.state.delete.bind(w.state),
        write: w.state.write.bind(w.state),
      } satisfies StateStore,
    };
    await expect(runCoordinationStep(deps, term, ONE_PASS)).rejects.toThrow(LeadershipLostError);
    expect(w.resultsPoison.length).toBe(0);
  });
});
