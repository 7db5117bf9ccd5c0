import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createRegistry } from "../../scripts/support/repoKinds";
import { groupByView, type GroupByPartial } from "../../src/groupBy/groupBy";
import { RECENT_JOBS_LIMIT, jobIndexSchema, keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep, type JobProgress } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import type { TaskKind } from "../../src/coordination/kinds/taskKinds";
import type { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { StaleEpochError } from "../../src/library/errors";
import { HOLD_PASSED_MS, ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm, type MemoryFiles } from "../support/memoryPorts";

describe("coordination step (unit, in-memory ports)", () => {
  it("dispatches at most the batch size per pass and never more than maxInFlight without results", async () => {
    const { deps, work: queue, state } = world({ dispatchBatchSize: 10, maxInFlight: 15 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 50 }, (_, i) => item("a", i)),
    });
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(report).toMatchObject({ registered: 1, dispatched: 10 });
    // The next pass can send only 5 more (15 in flight), then none until results arrive.
    expect((await runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).dispatched).toBe(5);
    expect((await runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).dispatched).toBe(0);
    expect(queue.length).toBe(15);
    expect((await readJob(state, id))?.dispatched).toBe(15);
  });

  it("counts a result delivered twice only once, and completes exactly when every item is done or failed", async () => {
    const { deps, events, work: queue, results, state } = world();
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("a", 2), item("b", 5)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    await results.send(results.bodies()); // every result delivered a second time
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 3, failedCount: 0 });
    expect(groupByView(job?.aggregate as GroupByPartial)).toEqual({
      a: { count: 2, sum: 3, min: 1, max: 2 },
      b: { count: 1, sum: 5, min: 5, max: 5 },
    });
    expect(events.filter((e) => e.type === "job-completed")).toHaveLength(1);
    expect(results.length).toBe(0);
  });

  it("a new leader continues the old leader's job where it stopped, with every item counted once", async () => {
    const { deps, work: queue, state } = world({ dispatchBatchSize: 4, maxInFlight: 4 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 12 }, (_, i) => item(`k${i % 3}`, i)),
    });
    const first = fakeTerm(1);
    await runCoordinationStep(deps, first, ONE_PASS);
    await work(deps, queue);
    first.end(); // the first leader is gone mid-job
    for (let round = 0; round < 6; round++) {
      await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
      await work(deps, queue);
    }
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 12, dispatched: 12 });
    const view = groupByView(job?.aggregate as GroupByPartial);
    expect(Object.values(view).reduce((n, g) => n + g.count, 0)).toBe(12);
    expect(view.k0).toEqual({ count: 4, sum: 0 + 3 + 6 + 9, min: 0, max: 9 });
  });

  it("a stale leader's step is refused with StaleEpochError once a newer epoch has written, and changes nothing", async () => {
    const { deps, state, work: queue, results } = world();
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("a", 2)],
    });
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS); // the newer leader registers and dispatches
    await work(deps, queue);
    const before = await state.read(keys.jobState(id));
    // The old leader wakes up and tries to fold the results into the job the newer epoch wrote.
    await expect(runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).rejects.toBeInstanceOf(StaleEpochError);
    expect(await state.read(keys.jobState(id))).toEqual(before);
    results.nowMs += 60_000;
    expect(results.length).toBe(2); // not acknowledged: the real leader still gets them
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 2, epoch: 2 });
  });

  it("records items whose messages the host poisoned as failed with a reason (once their hold has passed), and leaves unattributable poison alone", async () => {
    const { deps, work: queue, poison, state, clock } = world();
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("a", 2)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const [first, second] = await queue.receive(2, 60);
    if (first === undefined || second === undefined) throw new Error("expected two work messages");
    await poison.send([first.rawText, "garbage that no job can claim"]); // the host moved one after 5 failed deliveries
    await queue.delete(first);
    await processWorkMessage(deps, JSON.parse(second.rawText) as unknown, {
      id: second.id,
      dequeueCount: 1,
      maxDequeueCount: 5,
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "running", doneCount: 1, failedCount: 0 }); // held
    clock.ms += HOLD_PASSED_MS;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 1, failedCount: 1 });
    expect(job?.failures[0]?.reason).toMatch(/retries exhausted/);
    expect(poison.bodies()).toEqual(["garbage that no job can claim"]);
  });

  it("rejects a result for an item the job does not have to the results poison queue, with a reason, without counting it", async () => {
    const { deps, results, resultsPoison: poison, state } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await results.send([JSON.stringify({ v: 1, jobId: id, item: 7, ok: true, partial: [["a", 1, "1000000", 1, 1]] })]);
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(report).toMatchObject({ rejected: 1, folded: 0, duplicates: 0 });
    expect((JSON.parse(poison.bodies()[0] ?? "{}") as { rejected: { reason: string } }).rejected.reason).toMatch(
      /item 7 is out of range/,
    );
    expect(await readJob(state, id)).toMatchObject({ doneCount: 0, status: "running" });
  });

  it("moves ended jobs from the index's active list to its bounded recent list, newest last, written under the epoch", async () => {
    const { deps, work: queue, state } = world();
    const ids: string[] = [];
    for (let n = 0; n < RECENT_JOBS_LIMIT + 2; n++) {
      const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", n)] });
      ids.push(id);
      await runCoordinationStep(deps, fakeTerm(3), ONE_PASS); // registers and dispatches
      await work(deps, queue);
      await runCoordinationStep(deps, fakeTerm(3), ONE_PASS); // folds: the job completes and leaves the active list
    }
    const stored = await state.read(keys.index);
    const index = jobIndexSchema.parse(stored?.value);
    expect(index.active).toEqual([]);
    expect(index.recent).toEqual(ids.slice(-RECENT_JOBS_LIMIT));
    expect(stored?.epoch).toBe(3);
  });

  it("reads an index written before the recent list existed", () => {
    expect(jobIndexSchema.parse({ v: 1, active: ["a"] })).toEqual({ v: 1, active: ["a"], recent: [] });
  });

  it("keeps the leader's per-job state small: two bits per item, not the results", async () => {
    const { deps, state } = world({ dispatchBatchSize: 1 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 100_000 }, (_, i) => item("k", i)),
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const stored = await state.read(keys.jobState(id));
    // two base64 bitmaps + fields
    expect(JSON.stringify(stored?.value).length).toBeLessThan(2 * (100_000 / 8) * 1.4 + 2000);
  });

  it("reports each job's progress (total, dispatched, done, failed) as of the step's last pass, for step-completed", async () => {
    const { deps, work: queue } = world({ dispatchBatchSize: 10, maxInFlight: 2 });
    // Four items: what is left past the window (2 units) is more than a spread (1 unit), so it waits for results.
    const first = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("a", 2), item("b", 3), item("b", 4)],
    });
    const second = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("c", 1), { inline: '{"k":"c","v":"lots"}' }],
    });
    const byId = (jobs: JobProgress[]): JobProgress[] =>
      [...jobs].sort((a, b) => (a.id === first.id ? -1 : b.id === first.id ? 1 : 0));
    expect(byId((await runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).jobs)).toEqual([
      { id: first.id, total: 4, dispatched: 2, done: 0, failed: 0 },
      { id: second.id, total: 2, dispatched: 2, done: 0, failed: 0 },
    ]);
    await work(deps, queue);
    // The second job completes in this step (one item done, one failed) and is still reported, with its final counts.
    expect(byId((await runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).jobs)).toEqual([
      { id: first.id, total: 4, dispatched: 4, done: 2, failed: 0 },
      { id: second.id, total: 2, dispatched: 2, done: 1, failed: 1 },
    ]);
  });
});

/** A kind whose partial is an object, unlike group-by's array: what some processes of a mixed deploy lack. */
const tallyKind: TaskKind<Record<string, never>, { n: number }> = {
  name: "tally",
  params: z.strictObject({}),
  process: () => ({ n: 1 }),
  aggregate: {
    schema: z.strictObject({ n: z.number().int() }),
    merge: (a, b) => ({ n: a.n + b.n }),
    empty: () => ({ n: 0 }),
  },
};
const withTally = (): TaskRegistry => createRegistry().register(tallyKind);

describe("coordination with a task kind some processes lack (unit; found by the simulator)", () => {
  it("a leader without the job's kind registers it so that a leader with the kind folds it (seed 1015)", async () => {
    const { deps, work: queue, state } = world({ registry: createRegistry() });
    const { id } = await storeSubmission(deps.system, {
      kind: "tally",
      params: {},
      items: [{ inline: "x" }, { inline: "y" }],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // registers and dispatches without knowing the kind
    const full = { ...deps, registry: withTally() };
    await work(full, queue);
    await runCoordinationStep(full, fakeTerm(2), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({
      status: "completed",
      doneCount: 2,
      failedCount: 0,
      aggregate: { n: 2 },
    });
  });

  it("a leader without the job's kind leaves valid results for a leader that has it instead of failing them", async () => {
    const { deps, work: queue, state } = world({ registry: withTally() });
    const { id } = await storeSubmission(deps.system, {
      kind: "tally",
      params: {},
      items: [{ inline: "x" }, { inline: "y" }],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    await runCoordinationStep({ ...deps, registry: createRegistry() }, fakeTerm(2), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "running", doneCount: 0, failedCount: 0 });
    await runCoordinationStep(deps, fakeTerm(3), ONE_PASS); // released at once: the next leader with the kind sees them
    expect(await readJob(state, id)).toMatchObject({
      status: "completed",
      doneCount: 2,
      failedCount: 0,
      aggregate: { n: 2 },
    });
  });
});

describe("worker (unit)", () => {
  it.each([
    ["not JSON", "{oops", /not valid JSON/],
    ["the wrong shape", { hello: "world" }, /v: /],
    [
      "an out-of-range item",
      { v: 1, jobId: "j1", item: -4, kind: "group-by", params, input: { inline: "" } },
      /item: /,
    ],
    [
      "a __proto__ key",
      JSON.parse(
        '{"v":1,"jobId":"j1","item":0,"kind":"group-by","params":{},"input":{"inline":""},"__proto__":{"polluted":true}}',
      ) as unknown,
      /Unrecognized key|unrecognized/i,
    ],
  ])("moves a message with %s to the poison queue with a reason, without throwing", async (_name, payload, reason) => {
    const { deps, poison, results } = world();
    const outcome = await processWorkMessage(deps, payload, { id: "m1", dequeueCount: 1, maxDequeueCount: 5 });
    expect(outcome.status).toBe("rejected");
    const [body] = poison.bodies();
    expect((JSON.parse(body ?? "{}") as { rejected: { reason: string } }).rejected.reason).toMatch(reason);
    expect(results.length).toBe(0);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("reports an item with unusable input as failed, with the reason (no retry can help)", async () => {
    const { deps, results } = world();
    const outcome = await processWorkMessage(
      deps,
      { v: 1, jobId: "j1", item: 0, kind: "group-by", params, input: { inline: '{"k":"a","v":"lots"}' } },
      { id: "m1", dequeueCount: 1, maxDequeueCount: 5 },
    );
    expect(outcome).toMatchObject({ status: "failed", reason: expect.stringMatching(/not a number/) as unknown });
    expect(JSON.parse(results.bodies()[0] ?? "{}")).toMatchObject({ ok: false, item: 0 });
  });

  it("rethrows a transient failure for the host to retry, and on the last delivery reports the item as failed instead", async () => {
    const { deps, results } = world();
    deps.inputs.open = () => Promise.reject(new Error("storage is down"));
    const message = { v: 1, jobId: "j1", item: 3, kind: "group-by", params, input: { blob: "inputs/x.ndjson" } };
    await expect(processWorkMessage(deps, message, { id: "m1", dequeueCount: 2, maxDequeueCount: 5 })).rejects.toThrow(
      "storage is down",
    );
    expect(results.length).toBe(0);
    // Not thrown: the host would poison the message, and the poison fold could fail a unit's items that succeeded.
    await expect(
      processWorkMessage(deps, message, { id: "m1", dequeueCount: 5, maxDequeueCount: 5 }),
    ).resolves.toMatchObject({ status: "failed", item: 3 });
    expect(JSON.parse(results.bodies()[0] ?? "{}")).toMatchObject({
      ok: false,
      item: 3,
      reason: expect.stringMatching(/all 5 deliveries/) as unknown,
    });
  });
});

/** Counts the reads of one blob through `files` from now on. */
function countReads(files: MemoryFiles, name: string): { count: number } {
  const reads = { count: 0 };
  const readText = files.readText.bind(files);
  files.readText = (read) => {
    if (read === name) reads.count++;
    return readText(read);
  };
  return reads;
}

describe("coordination step: dispatch and polling pace (issue 9)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("records the cursor after each group of sends, so a send that fails later re-sends only its own group", async () => {
    const { deps, events, work: queue, state } = world({ dispatchBatchSize: 200, maxInFlight: 400 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 200 }, (_, i) => item("a", i)),
    });
    const send = queue.send.bind(queue);
    let sends = 0;
    queue.send = (texts, options) => (++sends === 2 ? Promise.reject(new Error("storage down")) : send(texts, options));
    // Steps until every item went out (a step that fails is the next step's to finish).
    for (let step = 0; step < 5 && (await readJob(state, id))?.dispatched !== 200; step++)
      await runCoordinationStep(deps, fakeTerm(1), ONE_PASS).catch(() => undefined);
    expect((await readJob(state, id))?.dispatched).toBe(200);
    // Each one-item unit went out once: the first group was recorded before the second group's send failed.
    const firstItems = (await queue.receive(1000, 60)).map(
      (m) => (JSON.parse(m.text ?? "null") as { first: number }).first,
    );
    expect(firstItems).toHaveLength(200);
    expect(new Set(firstItems).size).toBe(200);
    expect(events.filter((event) => event.type === "job-pass-failed")).toHaveLength(1);
  });

  it("a job whose dispatch fails does not stop the others: they go out in the same pass, and an event names the job", async () => {
    const { deps, events, work: queue, state } = world({ dispatchBatchSize: 10, maxInFlight: 10 });
    const stuck = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    const other = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("b", 2)] });
    const send = queue.send.bind(queue);
    queue.send = (texts, options) =>
      texts.some((text) => text.includes(stuck.id))
        ? Promise.reject(new Error("storage answered 413 RequestBodyTooLarge"))
        : send(texts, options);
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(report).toMatchObject({ registered: 2, dispatched: 1 });
    expect((await readJob(state, other.id))?.dispatched).toBe(1);
    expect((await readJob(state, stuck.id))?.dispatched).toBe(0);
    // One event per pass that tried the stuck job, each naming it; none for the other job.
    const failures = events.filter((event) => event.type === "job-pass-failed");
    expect(failures.length).toBeGreaterThanOrEqual(1);
    expect(failures.length).toBe(report.jobErrors);
    for (const failure of failures)
      expect(failure).toMatchObject({ jobId: stuck.id, epoch: 1, error: expect.stringContaining("413") as unknown });
  });

  it("one pass of 4096 one-item units writes the job a few times, not once per group, and each group reports progress", async () => {
    const { deps, state } = world({ dispatchBatchSize: 4096, maxInFlight: 8192, workUnitMaxItems: 1 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 5000 }, (_, i) => item("a", i)),
    });
    let writes = 0;
    const write = state.write.bind(state);
    state.write = (key, value, epoch, condition) => {
      if (key === keys.jobState(id)) writes++;
      return write(key, value, epoch, condition);
    };
    const term = fakeTerm(1);
    let progressReports = 0;
    term.reportProgress = () => {
      progressReports++;
    };
    const report = await runCoordinationStep(deps, term, ONE_PASS);
    expect(report.dispatched).toBe(4096);
    expect((await readJob(state, id))?.dispatched).toBe(4096);
    expect(writes - 1).toBeLessThanOrEqual(4); // less the registration's create
    expect(progressReports).toBeGreaterThanOrEqual(64); // one per group of 64 units sent
  });

  it("a step lists the inbox and the cancellation requests at its first pass, then at most once a second (issue 24: a List is billed as a write)", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { deps, system } = world({ dispatchBatchSize: 10, maxInFlight: 10 });
    await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 100 }, (_, i) => item("a", i)),
    });
    const lists: { prefix: string; atMs: number }[] = [];
    const list = system.list.bind(system);
    system.list = (prefix, max) => {
      lists.push({ prefix, atMs: Date.now() });
      return list(prefix, max);
    };
    const progress = { done: false };
    // No worker runs: after the first pass the job waits on results (its in-flight items are all out).
    const step = runCoordinationStep(deps, fakeTerm(1), { budgetMs: 3000, monotonicMs: () => Date.now() }).finally(
      () => (progress.done = true),
    );
    while (!progress.done) {
      await vi.advanceTimersByTimeAsync(5);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const report = await step;
    expect(report.passes).toBeGreaterThanOrEqual(8);
    for (const prefix of [keys.inboxPrefix, keys.cancelPrefix]) {
      const times = lists.filter((entry) => entry.prefix === prefix).map((entry) => entry.atMs);
      expect(times.length).toBeGreaterThanOrEqual(3); // the first pass, and again every second of the step
      expect(times.length).toBeLessThanOrEqual(4);
      for (let index = 1; index < times.length; index++)
        expect((times[index] ?? 0) - (times[index - 1] ?? 0)).toBeGreaterThanOrEqual(1000);
    }
  });

  it("a step reads each chunk of a job once, however many passes dispatch from it", async () => {
    const { deps, work: queue, state, system } = world({ dispatchBatchSize: 10, maxInFlight: 1000 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 100 }, (_, i) => item("a", i)),
    });
    const chunkReads = countReads(system, keys.chunk(id, 0));
    let clock = 0;
    const report = await runCoordinationStep(deps, fakeTerm(1), { budgetMs: 1000, monotonicMs: () => (clock += 90) });
    expect(report.passes).toBeGreaterThanOrEqual(3);
    expect((await readJob(state, id))?.dispatched).toBeGreaterThanOrEqual(30);
    expect(queue.length).toBe((await readJob(state, id))?.dispatched);
    expect(chunkReads.count).toBe(1);
  });

  it("a chunk larger than the step's chunk cache holds (16 MiB) is not kept: it is read again, not held in memory", async () => {
    const { deps, system } = world({ dispatchBatchSize: 10, maxInFlight: 1000 });
    const big = "x".repeat(20_000); // 1,000 items of 20 KB: a 20 MB chunk
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 1000 }, () => ({ inline: big })),
    });
    const chunkReads = countReads(system, keys.chunk(id, 0));
    let clock = 0;
    const report = await runCoordinationStep(deps, fakeTerm(1), { budgetMs: 400, monotonicMs: () => (clock += 90) });
    expect(report.passes).toBeGreaterThanOrEqual(2);
    expect(chunkReads.count).toBe(report.passes);
  });

  it("while items are out with workers, an idle step looks again after 50 ms, backing off to every 500 ms", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"] });
    const { deps, results } = world({ dispatchBatchSize: 10, maxInFlight: 10 });
    await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    const looks: number[] = [];
    const receive = results.receive.bind(results);
    results.receive = (max, visibilityS) => {
      looks.push(Date.now());
      return receive(max, visibilityS);
    };
    const start = Date.now();
    const progress = { done: false };
    const step = runCoordinationStep(deps, fakeTerm(1), { budgetMs: 2000, monotonicMs: () => Date.now() }).finally(
      () => (progress.done = true),
    );
    while (!progress.done) {
      await vi.advanceTimersByTimeAsync(5);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await step;
    // One look per pass (its receives start together): the times between passes.
    const passes = [...new Set(looks)].map((at) => at - start);
    const gaps = passes.slice(1).map((at, index) => at - (passes[index] ?? 0));
    // Pass 1 registers and dispatches (work), pass 2 follows at once; from then on nothing arrives.
    expect(gaps.slice(1, 7)).toEqual([50, 100, 200, 400, 500, 500]);
  });
});
