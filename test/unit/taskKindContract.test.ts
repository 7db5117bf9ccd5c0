import { describe, expect, it } from "vitest";
import { z } from "zod";
import { keys } from "../../src/coordination/state/jobState";
import { JobStopChecks, writeJobStop } from "../../src/coordination/state/jobStops";
import { requestCancel } from "../../src/coordination/jobs/cancel";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission, validateSubmission } from "../../src/coordination/jobs/submit";
import { defineTaskKind, ItemError, type TaskContext, type TaskInput } from "../../src/coordination/kinds/taskKinds";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { processWorkMessage, type WorkOutcome } from "../../src/coordination/worker/worker";
import { ConfigurationError } from "../../src/library/errors";
import { ONE_PASS, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/** A promise with its resolve, to hold an item's `process` until the test lets it go. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** Waits until `condition` holds, letting the event loop run (no fixed sleeps). */
async function until(condition: () => boolean): Promise<void> {
  for (let turn = 0; !condition(); turn++) {
    if (turn > 10_000) throw new Error("condition never held");
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** What a kind's `process` saw, per call. */
interface Seen {
  input: { text: string; bytes: number[]; blob: string | undefined };
  context: Omit<TaskContext<unknown>, "abortSignal" | "logger"> & { aborted: boolean; logs: boolean };
}

const recorder = (seen: Seen[]) => async (input: TaskInput, context: TaskContext<{ tag: string }>) => {
  await Promise.resolve();
  context.logger.info(`item ${context.index}`);
  seen.push({
    input: { text: input.text, bytes: [...input.bytes], blob: input.blob },
    context: {
      params: context.params,
      jobId: context.jobId,
      index: context.index,
      idempotencyKey: context.idempotencyKey,
      aborted: context.abortSignal.aborted,
      logs: true,
    },
  });
  return input.bytes.byteLength;
};

describe("a task kind does real work (issue 20): async, bytes and text, params, keys, a signal, a logger", () => {
  it("an async kind gets each item's bytes and text, the params, the job id, its index and a stable idempotency key; sizes fold into the aggregate", async () => {
    const seen: Seen[] = [];
    const sizes = defineTaskKind({
      name: "sizes",
      params: z.strictObject({ tag: z.string() }),
      process: recorder(seen),
      aggregate: { empty: () => 0, merge: (a: number, b: number) => a + b },
    });
    const {
      deps,
      work: queue,
      state,
      inputs,
    } = world({
      registry: new TaskRegistry([sizes]),
      workUnitMaxItems: 8,
    });
    await inputs.writeText("photos/a.bin", "héllo");
    const { id } = await storeSubmission(deps.system, {
      kind: "sizes",
      params: { tag: "t" },
      items: [{ inline: "ab" }, { blob: "photos/a.bin" }],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // The same unit delivered twice (a redelivery): the same keys both times.
    const [message] = queue.bodies();
    await work(deps, queue);
    await processWorkMessage(deps, JSON.parse(message ?? "null"), { id: "again", dequeueCount: 2, maxDequeueCount: 5 });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);

    expect(seen.map((s) => s.input)).toEqual([
      { text: "ab", bytes: [...Buffer.from("ab")], blob: undefined },
      { text: "héllo", bytes: [...Buffer.from("héllo")], blob: "photos/a.bin" },
      { text: "ab", bytes: [...Buffer.from("ab")], blob: undefined },
      { text: "héllo", bytes: [...Buffer.from("héllo")], blob: "photos/a.bin" },
    ]);
    expect(seen.map((s) => s.context)).toEqual(
      [0, 1, 0, 1].map((index) => ({
        params: { tag: "t" },
        jobId: id,
        index,
        idempotencyKey: `${id}/${index}`,
        aborted: false,
        logs: true,
      })),
    );
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 2, aggregate: 2 + Buffer.byteLength("héllo") });
  });

  it("a kind without an aggregate counts items done and failed; its job's aggregate stays null and no partial is sent", async () => {
    const touched: number[] = [];
    const sideEffect = defineTaskKind({
      name: "side-effect",
      process: async (input, { index }) => {
        await Promise.resolve();
        if (input.text === "bad") throw new ItemError("bad input");
        touched.push(index);
        return { large: "x".repeat(1000) };
      },
    });
    const {
      deps,
      work: queue,
      state,
      results,
    } = world({ registry: new TaskRegistry([sideEffect]), workUnitMaxItems: 4 });
    const { id } = await storeSubmission(deps.system, {
      kind: "side-effect",
      params: null,
      items: [{ inline: "a" }, { inline: "bad" }, { inline: "c" }],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    const [result] = results.bodies();
    expect(JSON.parse(result ?? "{}")).not.toHaveProperty("partial");
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(touched.sort()).toEqual([0, 2]);
    expect(await readJob(state, id)).toMatchObject({
      status: "completed",
      doneCount: 2,
      failedCount: 1,
      aggregate: null,
      failures: [{ item: 1, reason: "bad input" }],
    });
  });

  it("items of a unit run at most the kind's concurrency at once, and more than one when it allows", async () => {
    const gates = Array.from({ length: 6 }, deferred);
    let running = 0;
    let most = 0;
    const slow = defineTaskKind({
      name: "slow",
      concurrency: 3,
      async process(_input, { index }) {
        running++;
        most = Math.max(most, running);
        await gates[index]?.promise;
        running--;
      },
    });
    const { deps, work: queue } = world({ registry: new TaskRegistry([slow]), workUnitMaxItems: 6 });
    await storeSubmission(deps.system, { kind: "slow", params: null, items: gates.map(() => ({ inline: "x" })) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const working = work(deps, queue);
    await until(() => running === 3);
    for (const gate of gates) {
      gate.resolve();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await working;
    expect(most).toBe(3);
  });

  it("WORK_UNIT_CONCURRENCY applies to kinds that set no concurrency of their own", async () => {
    let running = 0;
    let most = 0;
    const gate = deferred();
    const plain = defineTaskKind({
      name: "plain",
      async process() {
        running++;
        most = Math.max(most, running);
        await gate.promise;
        running--;
      },
    });
    const { deps, work: queue } = world({
      registry: new TaskRegistry([plain]),
      workUnitMaxItems: 5,
      workUnitConcurrency: 2,
    });
    await storeSubmission(deps.system, {
      kind: "plain",
      params: null,
      items: Array.from({ length: 5 }, () => ({ inline: "x" })),
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const working = work(deps, queue);
    await until(() => running === 2);
    gate.resolve();
    await working;
    expect(most).toBe(2);
  });

  it("a worker given a unit concurrency below 1 refuses the unit (thrown, so it is delivered again) instead of processing none of its items", async () => {
    const processed: number[] = [];
    const plain = defineTaskKind({
      name: "plain",
      process: (_input, { index }) => {
        processed.push(index);
      },
    });
    const { deps } = world({ registry: new TaskRegistry([plain]), workUnitConcurrency: 0 });
    const unit = {
      v: 2,
      jobId: "j",
      kind: "plain",
      params: null,
      first: 0,
      inputs: [{ inline: "x" }, { inline: "y" }],
    };
    await expect(processWorkMessage(deps, unit, { id: "m1", dequeueCount: 1, maxDequeueCount: 5 })).rejects.toThrow(
      /concurrency/,
    );
    expect(processed).toEqual([]);
  });

  it("a transient failure of one item aborts the unit's other items and is thrown (the host redelivers the unit); nothing is sent", async () => {
    const signals: AbortSignal[] = [];
    const started = deferred();
    const flaky = defineTaskKind({
      name: "flaky",
      concurrency: 2,
      async process(input, { abortSignal }) {
        if (input.text === "boom") {
          await started.promise;
          throw new Error("socket hang up");
        }
        signals.push(abortSignal);
        started.resolve();
        await new Promise((resolve) => abortSignal.addEventListener("abort", resolve, { once: true }));
        throw abortSignal.reason;
      },
    });
    const { deps, work: queue, results } = world({ registry: new TaskRegistry([flaky]), workUnitMaxItems: 4 });
    await storeSubmission(deps.system, { kind: "flaky", params: null, items: [{ inline: "boom" }, { inline: "ok" }] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await expect(work(deps, queue)).rejects.toThrow("socket hang up");
    expect(signals.map((signal) => signal.aborted)).toEqual([true]);
    expect(results.bodies()).toEqual([]);
  });

  it("the host's shutdown aborts the items in flight and the unit is thrown back for redelivery, not reported (a delivery before the last: lastDeliveryShutdown.test.ts has the last)", async () => {
    const inFlight = deferred();
    const shutdown = new AbortController();
    const waits = defineTaskKind({
      name: "waits",
      async process(_input, { abortSignal }) {
        inFlight.resolve();
        await new Promise((resolve) => abortSignal.addEventListener("abort", resolve, { once: true }));
        throw new Error("interrupted");
      },
    });
    const { deps, work: queue, results } = world({ registry: new TaskRegistry([waits]), workUnitMaxItems: 4 });
    await storeSubmission(deps.system, { kind: "waits", params: null, items: [{ inline: "a" }, { inline: "b" }] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const [message] = await queue.receive(1, 30);
    const handling = processWorkMessage(
      deps,
      JSON.parse(message?.text ?? "null"),
      { id: "m", dequeueCount: 4, maxDequeueCount: 5 },
      { abortSignal: shutdown.signal },
    );
    await inFlight.promise;
    shutdown.abort(new Error("host shutting down"));
    await expect(handling).rejects.toThrow("host shutting down");
    expect(results.bodies()).toEqual([]);
  });

  it("a kind's definition is checked when it is registered, naming the kind and each problem", () => {
    expect(() => new TaskRegistry([{ name: "bad name!", process: () => 1, concurrency: 0 }])).toThrow(
      new ConfigurationError(
        `Task kind "bad name!" is not usable: its name must be 1–64 letters, digits, '.', '_' or '-'; concurrency is 0; it must be a whole number from 1 to 64.`,
      ),
    );
    expect(
      () =>
        new TaskRegistry([
          { name: "twice", process: () => 1 },
          { name: "twice", process: () => 2 },
        ]),
    ).toThrow(/registered twice/);
  });

  it("a submission may leave out params for a kind that takes none: it is stored, dispatched and processed with null", async () => {
    const seen: unknown[] = [];
    const plain = defineTaskKind({ name: "plain", process: (_input, { params }) => void seen.push(params) });
    const { deps, work: queue, state } = world({ registry: new TaskRegistry([plain]) });
    const validated = validateSubmission({ kind: "plain", items: [{ inline: "x" }] }, deps.registry);
    if (!validated.ok) throw new Error(JSON.stringify(validated.errors));
    const { id } = await storeSubmission(deps.system, { ...validated.value, items: validated.value.items ?? [] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(seen).toEqual([null]);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 1, params: null });
  });

  it("params are validated by the kind's Standard Schema at submission, each problem named with its field", () => {
    const registry = new TaskRegistry([
      defineTaskKind({ name: "needs", params: z.strictObject({ size: z.number().int().min(1) }), process: () => 1 }),
    ]);
    const result = validateSubmission({ kind: "needs", params: { size: 0 }, items: [{ inline: "x" }] }, registry);
    expect(result).toEqual({
      ok: false,
      errors: [{ field: "params.size", message: expect.stringMatching(/>=1|at least 1|too small/i) as unknown }],
    });
  });
});

describe("workers check cancellation before each item (issue 20)", () => {
  /** A kind that counts the items it processed. */
  function counting() {
    const processed: number[] = [];
    const kind = defineTaskKind({
      name: "count",
      process: (_input, { index }) => {
        processed.push(index);
      },
    });
    return { kind, processed };
  }

  it("a unit of a job whose cancellation was requested processes none of its items and sends no result", async () => {
    const { kind, processed } = counting();
    const { deps, work: queue, results } = world({ registry: new TaskRegistry([kind]), workUnitMaxItems: 10 });
    const { id } = await storeSubmission(deps.system, {
      kind: "count",
      params: null,
      items: Array.from({ length: 10 }, () => ({ inline: "x" })),
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await requestCancel(deps, id)).toEqual({ outcome: "requested", id });
    const [message] = await queue.receive(1, 30);
    const outcome = await processWorkMessage(deps, JSON.parse(message?.text ?? "null"), {
      id: "m",
      dequeueCount: 1,
      maxDequeueCount: 5,
    });
    expect(outcome).toEqual<WorkOutcome>({
      status: "stopped",
      jobId: id,
      kind: "count",
      item: 0,
      count: 10,
      itemsDone: 0,
      itemsFailed: 0,
      skipped: 10,
    });
    expect(processed).toEqual([]);
    expect(results.bodies()).toEqual([]);
  });

  it("a stop that arrives mid-unit ends it before the next item once the last answer is a second old; what was done is reported", async () => {
    let nowMs = 0;
    const { kind, processed } = counting();
    const made = world({ registry: new TaskRegistry([kind]), workUnitMaxItems: 10 });
    const { deps, work: queue, results, system } = made;
    const stops = new JobStopChecks(system, () => nowMs);
    const { id } = await storeSubmission(deps.system, {
      kind: "count",
      params: null,
      items: Array.from({ length: 6 }, () => ({ inline: "x" })),
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const stopping = defineTaskKind({
      name: "count",
      async process(input, context) {
        await kind.process(input, context);
        if (context.index === 2) {
          await writeJobStop(system, id);
          nowMs += 1001; // the check made when the unit started is now more than a second old
        }
      },
    });
    await work({ ...deps, jobStops: stops, registry: new TaskRegistry([stopping]) }, queue);
    expect(processed).toEqual([0, 1, 2]);
    expect(JSON.parse(results.bodies()[0] ?? "{}")).toMatchObject({ first: 0, count: 6, done: [[0, 2]], failed: [] });
  });

  it("the leader writes the stop blob when it ends a job early (expired), so workers stop taking its items", async () => {
    let now = 1000;
    const { kind } = counting();
    const { deps, system } = world({ registry: new TaskRegistry([kind]), now: () => now });
    const { id } = await storeSubmission(
      deps.system,
      { kind: "count", params: null, items: [{ inline: "x" }], timeoutS: 5 },
      { now: () => now },
    );
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await system.readText(keys.stop(id))).toBeUndefined();
    now += 6000;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await system.readText(keys.stop(id))).toBe("");
  });

  it("checks of one job by concurrent units share one read, and a stopped job stays stopped without more reads", async () => {
    let reads = 0;
    const files = {
      readText: async (name: string) => {
        reads++;
        await Promise.resolve();
        return name === keys.stop("gone") ? "" : undefined;
      },
    };
    const stops = new JobStopChecks(files, () => 0);
    expect(await Promise.all([1, 2, 3].map(() => stops.isStopped("job", { maxAgeMs: 0 })))).toEqual([
      false,
      false,
      false,
    ]);
    expect(reads).toBe(1);
    expect(await stops.isStopped("gone", { maxAgeMs: 0 })).toBe(true);
    expect(await stops.isStopped("gone", { maxAgeMs: 0 })).toBe(true);
    expect(reads).toBe(2);
  });
});
