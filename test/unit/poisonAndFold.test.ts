import { setImmediate as nextMacrotask } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import {
  groupByKind,
  groupByView,
  mergeGroups,
  type GroupByParams,
  type GroupByPartial,
} from "../../src/groupBy/groupBy";

/** The group-by kind's aggregate (it has one). */
const groupByAggregate = groupByKind.aggregate ?? { empty: () => [], merge: mergeGroups };
import { keys } from "../../src/coordination/state/jobState";
import { readJobStatus } from "../../src/coordination/jobs/status";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import type { TaskKind } from "../../src/coordination/kinds/taskKinds";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { ConcurrentUpdateError, StorageError } from "../../src/library/errors";
import type { Logger } from "../../src/library/util/logger";
import { HOLD_PASSED_MS, ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/** A work message as the leader sends it, for the poison queue. */
const workMessage = (jobId: string, index: number, kind = "group-by"): string =>
  JSON.stringify({ v: 1, jobId, item: index, kind, params, input: item("a", 1) });
/** A worker of a deployment that no longer has the group-by kind. */
const withoutKinds = new TaskRegistry();

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return {
    warnings,
    verbose: () => undefined,
    info: () => undefined,
    warn: (message) => warnings.push(message),
    error: (message) => warnings.push(message),
  };
}

describe("poison: every item of a real job ends as done or failed (issue 14, item 8)", () => {
  it("a worker that rejects real items (their task kind removed by a deploy) fails them with the worker's reason once their hold has passed, and the job completes", async () => {
    const { deps, work: queue, poison, state, clock } = world();
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("b", 2), item("c", 3)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const [first, ...rest] = await queue.receive(3, 60);
    if (first === undefined) throw new Error("expected work messages");
    await processWorkMessage(deps, JSON.parse(first.rawText) as unknown, {
      id: first.id,
      dequeueCount: 1,
      maxDequeueCount: 5,
    });
    // The worker without the kind throws a unit back on earlier deliveries and rejects it on its last.
    for (const message of rest)
      await processWorkMessage({ ...deps, registry: withoutKinds }, JSON.parse(message.rawText) as unknown, {
        id: message.id,
        dequeueCount: 5,
        maxDequeueCount: 5,
      });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // Held, with the worker's reason: another copy of the unit (a re-send) could still be done by a worker with it.
    expect(await readJob(state, id)).toMatchObject({ status: "running", doneCount: 1, failedCount: 0 });
    expect(poison.length).toBe(0); // claimed and deleted
    clock.ms += HOLD_PASSED_MS;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 1, failedCount: 2 });
    expect(job?.failures.map((failure) => failure.reason)).toEqual([
      expect.stringMatching(/^rejected by the worker: unknown task kind "group-by"/),
      expect.stringMatching(/^rejected by the worker: unknown task kind "group-by"/),
    ]);
  });

  it("the worker's rejection names the job and item when the message parses far enough, and neither when it does not", async () => {
    const { deps, poison } = world({ registry: withoutKinds });
    await processWorkMessage(deps, JSON.parse(workMessage("job-1", 4)) as unknown, {
      id: "m1",
      dequeueCount: 5, // its last delivery: before it, a unit of a kind the worker lacks is thrown back
      maxDequeueCount: 5,
    });
    await processWorkMessage(deps, "{not json", { id: "m2", dequeueCount: 1, maxDequeueCount: 5 });
    const [named, unnamed] = poison.bodies().map((body) => JSON.parse(body) as { rejected: Record<string, unknown> });
    expect(named?.rejected).toMatchObject({
      jobId: "job-1",
      item: 4,
      reason: expect.stringMatching(/unknown task kind/) as unknown,
    });
    expect(unnamed?.rejected).not.toHaveProperty("jobId");
  });

  it("a rejection written by an earlier version (no job in the wrapper) is attributed from its original message", async () => {
    const { deps, poison, state, clock } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await poison.send([
      JSON.stringify({
        rejected: { reason: 'unknown task kind "group-by"', messageId: "m1", atMs: 1 },
        original: workMessage(id, 0),
      }),
    ]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    clock.ms += HOLD_PASSED_MS;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({
      status: "completed",
      failedCount: 1,
      failures: [{ item: 0, reason: 'rejected by the worker: unknown task kind "group-by"' }],
    });
  });

  it("items of a missing chunk are recorded as failed with a reason naming the chunk, and nothing is sent for them", async () => {
    const { deps, system, work: queue, state } = world();
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("b", 2)],
    });
    system.blobs.delete(keys.chunk(id, 0));
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(queue.length).toBe(0);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", dispatched: 2, failedCount: 2 });
    expect(job?.failures[0]?.reason).toBe(`not dispatched: its chunk "${keys.chunk(id, 0)}" is missing`);
  });

  it("a corrupt chunk fails its items with the reason, instead of failing every step", async () => {
    const { deps, system, work: queue, state } = world();
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("b", 2)],
    });
    system.blobs.set(keys.chunk(id, 0), '[{"inline":');
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(queue.length).toBe(0);
    expect((await readJob(state, id))?.failures[0]?.reason).toMatch(
      new RegExp(`^not dispatched: its chunk "${keys.chunk(id, 0)}" is not valid: Unexpected end of JSON input`),
    );
  });

  it("a chunk entry that is not an item input fails that item, naming the chunk and entry; the others are sent", async () => {
    const { deps, system, work: queue, state } = world();
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("b", 2), item("c", 3)],
    });
    system.blobs.set(keys.chunk(id, 0), JSON.stringify([item("a", 1), 42, item("c", 3)]));
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(queue.bodies().map((body) => (JSON.parse(body) as { first: number }).first)).toEqual([0, 2]);
    expect(queue.bodies().map((body) => (JSON.parse(body) as { inputs: unknown[] }).inputs)).toEqual([
      [item("a", 1)],
      [item("c", 3)],
    ]);
    expect((await readJob(state, id))?.failures).toEqual([
      {
        item: 1,
        reason: expect.stringMatching(
          new RegExp(`^not dispatched: entry 1 of its chunk "${keys.chunk(id, 0)}" is not an item input: `),
        ) as unknown,
      },
    ]);
  });
});

describe("poison is never hidden for long (issue 14, item 9)", () => {
  it("poison no job claims stays visible to a peek, and is not even received", async () => {
    const { deps, poison } = world();
    await poison.send(["garbage that no job can claim", workMessage("no-such-job", 0)]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await poison.peek(32)).toHaveLength(2);
    expect(poison.calls.receive).toBe(0);
  });

  it("claimable poison is hidden for at most 30 s: a leader that dies before its write leaves it to the next one 30 s later", async () => {
    const { deps, poison, state, clock } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await poison.send([workMessage(id, 0)]);
    state.beforeWrite = (key) =>
      key === keys.jobState(id) ? Promise.reject(new Error("leader died (simulated)")) : Promise.resolve();
    await expect(runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).rejects.toThrow("leader died");
    poison.nowMs += 30_000;
    expect(await poison.peek(32)).toHaveLength(1);
    state.beforeWrite = undefined;
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect(poison.length).toBe(0); // claimed: its item held
    clock.ms += HOLD_PASSED_MS;
    await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", failedCount: 1 });
  });

  it("the poison queue is peeked at most once per step, however many passes the step makes", async () => {
    const { deps, poison } = world();
    // active, waiting on workers
    await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await poison.send(["garbage"]);
    const report = await runCoordinationStep(deps, fakeTerm(1), { budgetMs: 700 });
    expect(report.passes).toBeGreaterThan(1);
    expect(poison.calls.peek + poison.calls.receive).toBe(1);
  });

  it("a page of unclaimable poison does not hide a claimable message behind it, and stays visible", async () => {
    const { deps, poison, state, clock } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await poison.send(Array.from({ length: 40 }, (_, index) => `garbage ${index}`));
    await poison.send([workMessage(id, 0)]);
    for (let step = 0; step < 3 && (await readJob(state, id))?.heldBits === undefined; step++)
      await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    clock.ms += HOLD_PASSED_MS;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", failedCount: 1 });
    expect(poison.length).toBe(40);
    expect(await poison.peek(32)).toHaveLength(32); // every unclaimed message visible (a peek shows at most 32)
  });
});

describe("folding stays cheap and bounded (issue 14, item 10)", () => {
  it("a job whose aggregate would exceed MAX_AGGREGATE_GROUPS ends as failed with the reason and a job-failed event, its counts kept", async () => {
    const {
      deps,
      events,
      work: queue,
      state,
      system,
    } = world({ maxAggregateGroups: 3, dispatchBatchSize: 2, maxInFlight: 2 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      // Six: after the second pass, what is left past the window (2 units) waits for results (a tail of 1 would not).
      items: ["a", "b", "c", "d", "e", "f"].map((key) => item(key, 1)),
    });
    for (let round = 0; round < 4; round++) {
      await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
      await work(deps, queue);
    }
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "failed", doneCount: 2, failedCount: 0 });
    expect(job?.failureReason).toBe(
      "the aggregate would have 4 groups, more than MAX_AGGREGATE_GROUPS (3); 2 items were done and 0 failed when the job stopped",
    );
    expect(events.filter((event) => event.type === "job-failed")).toEqual([
      expect.objectContaining({ jobId: id, reason: job?.failureReason, done: 2, failed: 0 }),
    ]);
    expect(await readJobStatus(state, system, deps.registry, id)).toMatchObject({
      status: "failed",
      failureReason: job?.failureReason,
      progress: { done: 2, failed: 0 },
    });
    expect(queue.length).toBe(0); // nothing more dispatched
  });

  it("a stored aggregate the kind's schema refuses fails the job with the reason, instead of failing every step", async () => {
    const { deps, work: queue, state } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    const stored = await state.read(keys.jobState(id));
    if (stored === undefined) throw new Error("expected the job");
    await state.write(
      keys.jobState(id),
      { ...(stored.value as object), aggregate: { not: "a group-by aggregate" } },
      1,
      { ifMatch: stored.etag },
    );
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({
      status: "failed",
      failureReason: expect.stringMatching(/^the stored aggregate is not valid for task kind "group-by": /) as unknown,
    });
  });

  it("folds a batch of results with one merge into the aggregate, not one merge of the whole aggregate per result", async () => {
    let largeMerges = 0;
    const counting: TaskKind<GroupByParams, GroupByPartial, ReturnType<typeof groupByView>> = {
      ...groupByKind,
      aggregate: {
        ...groupByAggregate,
        merge: (a, b) => {
          if (a.length + b.length >= 1000) largeMerges++;
          return mergeGroups(a, b);
        },
      },
    };
    const {
      deps,
      work: queue,
      state,
    } = world({ registry: new TaskRegistry().register(counting), dispatchBatchSize: 20, maxInFlight: 20 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 20 }, (_, index) => item(`k${index}`, index)),
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    const stored = await state.read(keys.jobState(id));
    if (stored === undefined) throw new Error("expected the job");
    const big: GroupByPartial = Array.from({ length: 1000 }, (_, index) => [
      `g${String(index).padStart(4, "0")}`,
      1,
      "1000000",
      1,
      1,
    ]);
    await state.write(keys.jobState(id), { ...(stored.value as object), aggregate: big }, 1, { ifMatch: stored.etag });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 20 });
    expect(largeMerges).toBe(1);
  });

  it("the leader yields to the event loop between fold batches, so its renewal timers can run", async () => {
    const { deps, work: queue, results } = world({ dispatchBatchSize: 300, maxInFlight: 300 });
    await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 300 }, (_, index) => item("k", index)),
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    expect(results.length).toBe(300); // three fold batches
    let ticks = 0;
    const ticking = { on: true };
    const ticker = (async () => {
      while (ticking.on) {
        await nextMacrotask();
        ticks++;
      }
    })();
    const step = runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const ticksAtStart = ticks;
    await step;
    ticking.on = false;
    await ticker;
    expect(ticks - ticksAtStart).toBeGreaterThanOrEqual(3); // at least once per batch
  });
});

describe("conflicts do not fail steps (issue 14, item 11)", () => {
  /** Makes a stale leader (epoch 1) write the job between the step's read and its write, `times` times. */
  function staleWrites(state: ReturnType<typeof world>["state"], key: string, times: number): { count: number } {
    const injected = { count: 0 };
    let writing = false;
    state.beforeWrite = async (written) => {
      if (written !== key || injected.count >= times || writing) return;
      injected.count++;
      const current = await state.read(key);
      if (current === undefined) return;
      writing = true;
      await state.write(key, { ...(current.value as object), lastEpoch: 1 }, 1, { ifMatch: current.etag });
      writing = false;
    };
    return injected;
  }

  it("a stale leader's write landing between the new leader's read and write is retried after a re-read, and each item counts once", async () => {
    const { deps, work: queue, results, state } = world();
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("b", 2)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    staleWrites(state, keys.jobState(id), 1);
    const report = await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect(report).toMatchObject({ folded: 2, duplicates: 0 });
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 2, epoch: 2 });
    expect(results.length).toBe(0);
  });

  it("gives up with ConcurrentUpdateError after 3 retries when every write of the job conflicts", async () => {
    const { deps, work: queue, state } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    const injected = staleWrites(state, keys.jobState(id), 100);
    await expect(runCoordinationStep(deps, fakeTerm(2), ONE_PASS)).rejects.toBeInstanceOf(ConcurrentUpdateError);
    expect(injected.count).toBe(4); // the first write and 3 retries
  });

  it("a failed delete of an already-folded result is logged, not a step failure; the redelivered result is a duplicate", async () => {
    const logger = recordingLogger();
    const { deps, work: queue, results, state } = world({ logger });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("a", 2)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    results.failDeletes = true;
    await expect(runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).resolves.toMatchObject({ folded: 2 });
    expect(logger.warnings.some((message) => message.includes("crashed before delete"))).toBe(true);
    results.failDeletes = false;
    results.nowMs += 30_000;
    expect(await runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).toMatchObject({ folded: 0, duplicates: 2 });
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 2 });
  });

  it("a work-poison message with an out-of-range item goes back to the work poison queue with the reason, not to the results poison queue", async () => {
    const { deps, poison, resultsPoison, state } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await poison.send([workMessage(id, 7)]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(resultsPoison.length).toBe(0);
    const [body] = poison.bodies();
    expect(poison.length).toBe(1);
    expect(JSON.parse(body ?? "{}")).toMatchObject({
      rejected: { reason: expect.stringMatching(/item 7 is out of range/) as unknown },
      original: workMessage(id, 7),
    });
    // not claimed again: the leader's own rejection stays as it is
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(poison.bodies()).toEqual([body]);
    expect(await readJob(state, id)).toMatchObject({ status: "running", failedCount: 0 });
  });
});

describe("the leader's rejections never fail a step", () => {
  it("the leader's rejection of a 45 KiB work-poison message still fits a queue message: sent back with the reason, no step fails", async () => {
    const { deps, poison, state } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // A unit the host poisoned, as large as dispatch makes one (45 KiB of JSON), naming items the job does not have.
    const inline = `${JSON.stringify({ k: "a", v: 1 })}\n`.repeat(61); // escaped once in the unit, twice in a rejection
    const unit = JSON.stringify({
      v: 2,
      jobId: id,
      first: 7,
      kind: "group-by",
      params,
      inputs: Array(32).fill({ inline }),
    });
    expect(Buffer.byteLength(unit)).toBeGreaterThan(44 * 1024);
    await poison.send([unit]);
    await expect(runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).resolves.toBeDefined();
    const [body] = poison.bodies();
    expect(poison.length).toBe(1);
    expect(JSON.parse(body ?? "{}")).toMatchObject({
      rejected: { by: "leader", reason: expect.stringMatching(/item 38 is out of range/) as unknown },
      original: expect.stringMatching(/^\{"v":2,/) as unknown,
    });
    expect(await readJob(state, id)).toMatchObject({ status: "running", failedCount: 0 });
  });
});

describe("a result's outcome blob", () => {
  /** A job of two items in one unit, dispatched, and a worker's result for it that names its outcome blob. */
  async function resultInABlob() {
    const made = world({ workUnitMaxItems: 2 });
    const { deps, results } = made;
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("b", 2)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await results.send([JSON.stringify({ v: 2, jobId: id, first: 0, count: 2, outcomeBlob: keys.partial(id, 0) })]);
    return { ...made, id };
  }

  it("storage refusing to read it (a 4xx) rejects the result with the reason, instead of failing the step", async () => {
    const { deps, system, resultsPoison } = await resultInABlob();
    system.open = () =>
      Promise.reject(new StorageError("InvalidUri", 400, "Reading blob failed: storage answered 400"));
    await expect(runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).resolves.toMatchObject({ rejected: 1 });
    expect(JSON.parse(resultsPoison.bodies()[0] ?? "{}")).toMatchObject({
      rejected: {
        reason: expect.stringMatching(
          /^reading its outcomeBlob "jobs\/.*\/partials\/0.json" was refused: Reading blob failed/,
        ) as unknown,
      },
    });
  });

  it("a 403 (the app's permissions, not the message) still fails the step, and the result comes back", async () => {
    const { deps, system, results, resultsPoison } = await resultInABlob();
    system.open = () => Promise.reject(new StorageError("AuthorizationPermissionMismatch", 403, "no permission"));
    await expect(runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).rejects.toThrow("no permission");
    expect({ results: results.length, poison: resultsPoison.length }).toEqual({ results: 1, poison: 0 });
  });
});

describe("a result the leader rejects still lets its job end", () => {
  /**
   * A running job of `items` items in units of 2 — its units `worked` and folded first, if asked — and then a step
   * over `result` (made for its id) on the results queue.
   */
  async function rejectedResult(
    result: (jobId: string) => Record<string, unknown>,
    { items = 3, worked = false }: { items?: number; worked?: boolean } = {},
  ) {
    const made = world({ workUnitMaxItems: 2 });
    const { deps, results } = made;
    const inputs = Array.from({ length: items }, (_, i) => item("a", i));
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: inputs });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    if (worked) {
      await work(deps, made.work);
      await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    }
    await results.send([JSON.stringify(result(id))]);
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const rejections = made.resultsPoison
      .bodies()
      .map((body) => (JSON.parse(body) as { rejected: { reason: string } }).rejected.reason);
    return { ...made, id, report, rejections, job: await readJob(made.state, id) };
  }

  it.each([
    ["ranges outside its unit", { done: [[0, 10_000_000]] }, /^items 0–10000000 are not all in its unit/],
    [
      "an outcome blob not its worker's",
      { outcomeBlob: "x/../../other" },
      /^its outcomeBlob "x\/..\/..\/other" is not/,
    ],
    ["a key no result has", { done: [[0, 1]], partial: [], extra: 1 }, /Unrecognized key/i],
  ])(
    "one with %s is rejected with the reason, and its unit's items are held with it, failed once the hold has passed: the job does not wait for them for ever",
    async (_name, fields, reason) => {
      const made = await rejectedResult((jobId) => ({ v: 2, jobId, first: 0, count: 2, ...fields }), { items: 2 });
      const { report, rejections } = made;
      expect(report).toMatchObject({ rejected: 1, failed: 0, folded: 0 });
      expect(rejections).toEqual([expect.stringMatching(reason)]);
      expect(made.job).toMatchObject({
        status: "running",
        doneCount: 0,
        failedCount: 0,
        heldBits: expect.any(String) as unknown,
      });
      made.clock.ms += HOLD_PASSED_MS;
      await runCoordinationStep(made.deps, fakeTerm(1), ONE_PASS);
      const job = await readJob(made.state, made.id);
      expect(job).toMatchObject({ status: "completed", doneCount: 0, failedCount: 2 });
      expect(job?.failures.map((failure) => failure.item)).toEqual([0, 1]);
      for (const failure of job?.failures ?? [])
        expect(failure.reason).toBe(`the leader rejected its unit's result: ${rejections[0] ?? ""}`);
    },
  );

  it("items already counted stay as they were: a rejected duplicate of a folded unit counts nothing", async () => {
    const { job, rejections } = await rejectedResult((jobId) => ({ v: 2, jobId, first: 0, count: 2, done: [[0, 9]] }), {
      items: 2,
      worked: true,
    });
    expect(rejections).toHaveLength(1);
    expect(job).toMatchObject({ status: "completed", doneCount: 2, failedCount: 0 });
  });

  it("a unit past the job's last item, or of no job, is only rejected: it names no items this job has", async () => {
    const past = await rejectedResult((jobId) => ({ v: 2, jobId, first: 2, count: 2, done: [[9, 9]] }));
    expect(past.rejections).toEqual([expect.stringMatching(/^items 9–9 are not all in its unit/)]);
    expect(past.job).toMatchObject({ doneCount: 0, failedCount: 0 });
    const none = await rejectedResult(() => ({ v: 2, jobId: "no-such-job", first: 0, count: 2, done: [[9, 9]] }));
    expect(none.rejections).toEqual([expect.stringMatching(/^items 9–9 are not all in its unit/)]);
  });
});

describe("a result the leader keeps failing on", () => {
  /** group-by, except that merging a partial with the group "cursed" throws (a bug in a kind, say). */
  const cursed: TaskKind<GroupByParams, GroupByPartial, ReturnType<typeof groupByView>> = {
    ...groupByKind,
    aggregate: {
      ...groupByAggregate,
      merge: (a, b) => {
        if ([...a, ...b].some(([group]) => group === "cursed"))
          throw new TypeError("merge cannot take the cursed group");
        return mergeGroups(a, b);
      },
    },
  };

  /** A job of two one-item units — the second one cursed — worked; then `steps` steps, 30 s apart, and their errors. */
  async function failingSteps(steps: number, overrides: Parameters<typeof world>[0] = {}) {
    const made = world({ registry: new TaskRegistry().register(cursed), ...overrides });
    const { deps, work: queue, results } = made;
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("cursed", 2)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    const errors: string[] = [];
    for (let step = 0; step < steps; step++) {
      await runCoordinationStep(deps, fakeTerm(1), ONE_PASS).catch((error: unknown) => errors.push(String(error)));
      results.nowMs += 30_000; // what a failed step leaves received comes back after its visibility timeout
    }
    return { ...made, id, errors };
  }

  it("fails steps until its 10th delivery, then goes to the results poison queue with the error as reason; the others fold", async () => {
    const { errors, resultsPoison, state, id, deps, clock } = await failingSteps(15);
    clock.ms += HOLD_PASSED_MS; // its unit's item was held; nothing else of it comes
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(errors).toEqual(Array(9).fill("TypeError: merge cannot take the cursed group"));
    const [rejection] = resultsPoison.bodies();
    expect(JSON.parse(rejection ?? "{}")).toMatchObject({
      rejected: {
        reason: "the leader failed on it 10 times, the last with: TypeError: merge cannot take the cursed group",
      },
    });
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 1, failedCount: 1 });
    expect(job?.failures).toEqual([
      {
        item: 1,
        reason:
          "the leader rejected its unit's result: the leader failed on it 10 times, the last with: TypeError: merge cannot take the cursed group",
      },
    ]);
  });

  it("is never blamed for storage that does not answer: those steps fail as long as storage does, and nothing is rejected", async () => {
    const made = await failingSteps(0, { registry: new TaskRegistry().register(groupByKind) });
    const { deps, state, results, resultsPoison, errors, id } = made;
    const write = state.write.bind(state);
    const down = new StorageError("StorageUnavailable", undefined, "storage did not answer");
    state.write = (key, ...rest) => (key === keys.jobState(id) ? Promise.reject(down) : write(key, ...rest));
    for (let step = 0; step < 15; step++) {
      await runCoordinationStep(deps, fakeTerm(1), ONE_PASS).catch((error: unknown) => errors.push(String(error)));
      results.nowMs += 30_000;
    }
    expect(errors).toEqual(Array(15).fill("StorageError: storage did not answer"));
    state.write = write;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect({ results: results.length, poison: resultsPoison.length }).toEqual({ results: 0, poison: 0 });
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 2 });
  });
});
