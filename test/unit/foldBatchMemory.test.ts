import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { FOLD_ROUND_BYTES } from "../../src/coordination/fold/foldResultBatch";
import { keys } from "../../src/coordination/state/jobState";
import { MAX_OUTCOME_BYTES } from "../../src/coordination/ports/messages";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import type { TaskKind } from "../../src/coordination/kinds/taskKinds";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { ONE_PASS, readJob, work, world } from "../support/coordinationWorld";
import { runOnHeap } from "../support/heapChild";
import { fakeTerm } from "../support/memoryPorts";

/**
 * A fold batch receives up to 128 results. Holding every one's partial until the job's one write, with no bound on an
 * outcome blob's size, let a legitimate group-by job whose units each have some tens of thousands of groups (their
 * inputs are blobs: any size) crash the leader's process with a heap OOM — an error no code path sees, so no delivery
 * bound applies: the results come back 30 s later and the next leader crashes the same way, for ever. Each result
 * alone was small enough; only the batch was not. Now a batch folds in rounds of at most FOLD_ROUND_BYTES of outcomes,
 * and an outcome larger than MAX_OUTCOME_BYTES is not read: its unit's items fail with the size and the limit.
 */
function leaderStep(items: number, groups: number, heapMb: number) {
  return runOnHeap(resolve(__dirname, "foldBatchMemory.child.ts"), heapMb, [items, groups], {
    nodeFlags: ["--expose-gc"],
  });
}

/**
 * A kind whose partial is a string of as many characters as its input says: outcomes of any size, cheaply. Merging
 * keeps the longer (then the greater) string: associative and commutative, with "" as identity.
 */
const padKind: TaskKind<unknown, string> = {
  name: "pad",
  process: (input) => "x".repeat(Number(input.text)),
  aggregate: {
    schema: z.string(),
    merge: (a, b) => (a.length !== b.length ? (a.length > b.length ? a : b) : a > b ? a : b),
    empty: () => "",
  },
};

/** A job of the pad kind, one item per unit, of items whose partials have these many characters; dispatched. */
async function padJob(lengths: number[]) {
  const made = world({ registry: new TaskRegistry().register(padKind), dispatchBatchSize: 100, maxInFlight: 100 });
  const { id } = await storeSubmission(made.deps.system, {
    kind: "pad",
    params: {},
    items: lengths.map((length) => ({ inline: String(length) })),
  });
  await runCoordinationStep(made.deps, fakeTerm(1), ONE_PASS);
  return { ...made, id };
}

describe("the leader's memory in one fold batch is bounded, whatever its results hold", () => {
  it("control: 16 results of units with 20,000 groups each fold on a 384 MB heap", () => {
    expect(leaderStep(16, 20_000, 384)).toMatchObject({
      status: 0,
      oom: false,
      stdout: expect.stringMatching(/job completed done 16$/) as unknown,
    });
  });

  it("128 results of units with 20,000 groups each (0.8 MB of JSON each; the job's aggregate has 20,000 groups) fold on a 384 MB heap", () => {
    expect(leaderStep(128, 20_000, 384)).toMatchObject({
      status: 0,
      oom: false,
      stdout: expect.stringMatching(/job completed done 128$/) as unknown,
    });
  });

  it("a batch whose outcomes hold more than FOLD_ROUND_BYTES folds in rounds, each item once; a garbage copy read first still loses", async () => {
    const size = Math.ceil(FOLD_ROUND_BYTES * 0.6); // two do not fit one round
    const { deps, work: queue, results, state, id } = await padJob([size, size, size]);
    await results.send([JSON.stringify({ v: 2, jobId: id, first: 2, count: 1, done: "garbage" })]);
    await work(deps, queue);
    expect(results.length).toBe(4);
    let jobWrites = 0;
    state.beforeWrite = (key) => {
      if (key === keys.jobState(id)) jobWrites++;
      return Promise.resolve();
    };
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(jobWrites).toBe(3); // one per round: no round held two of the outcomes
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 3, failedCount: 0 });
    expect((job?.aggregate as string).length).toBe(size);
  });

  it("an outcome blob larger than MAX_OUTCOME_BYTES is not read: its unit's items fail with its size and the limit", async () => {
    const { deps, results, state, system, id } = await padJob([1]);
    const bytes = MAX_OUTCOME_BYTES + 1;
    system.blobs.set(keys.outcome(id, 0), Buffer.alloc(bytes, " ")); // written by some other writer
    await results.send([JSON.stringify({ v: 2, jobId: id, first: 0, count: 1, outcomeBlob: keys.outcome(id, 0) })]);
    const open = system.open.bind(system);
    let read = false;
    system.open = async (name) => {
      const opened = await open(name);
      return (
        opened && {
          ...opened,
          content: (async function* () {
            read = true;
            yield* opened.content;
          })(),
        }
      );
    };
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(read).toBe(false);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 0, failedCount: 1 });
    expect(job?.failures[0]?.reason).toBe(
      `the unit's result blob "${keys.outcome(id, 0)}" is not usable: its outcome is ${bytes} bytes of JSON, more than an outcome may have (MAX_OUTCOME_BYTES, ${MAX_OUTCOME_BYTES} bytes): its merged partial result holds too many groups, or too long ones`,
    );
  });

  it("one whose size says less than it holds is read no further than MAX_OUTCOME_BYTES", async () => {
    const { deps, results, state, system, id } = await padJob([1]);
    system.blobs.set(keys.outcome(id, 0), Buffer.alloc(MAX_OUTCOME_BYTES + 1, " "));
    await results.send([JSON.stringify({ v: 2, jobId: id, first: 0, count: 1, outcomeBlob: keys.outcome(id, 0) })]);
    const open = system.open.bind(system);
    system.open = async (name) => {
      const opened = await open(name);
      return opened && { ...opened, sizeBytes: 10 };
    };
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect((await readJob(state, id))?.failures[0]?.reason).toMatch(
      new RegExp(`its outcome is more than ${MAX_OUTCOME_BYTES} bytes of JSON, more than an outcome may have`),
    );
  });

  it("a worker whose unit's outcome would be larger than MAX_OUTCOME_BYTES reports its items failed with that reason, and writes no blob", async () => {
    const { deps, work: queue, results, state, system, id } = await padJob([MAX_OUTCOME_BYTES]);
    await work(deps, queue);
    expect([...system.blobs.keys()].filter((name) => name.includes("/outcomes/"))).toEqual([]);
    expect(Buffer.byteLength(results.bodies()[0] ?? "")).toBeLessThan(1000);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 0, failedCount: 1 });
    const bytes = MAX_OUTCOME_BYTES + JSON.stringify({ done: [[0, 0]], partial: "", failed: [] }).length;
    expect(job?.failures[0]?.reason).toMatch(
      new RegExp(
        `^its outcome is ${bytes} bytes of JSON, more than an outcome may have \\(MAX_OUTCOME_BYTES, ${MAX_OUTCOME_BYTES} bytes\\)`,
      ),
    );
  });
});
