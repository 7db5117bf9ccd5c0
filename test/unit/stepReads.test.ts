/**
 * Issue 35, storage requests per item: a step reads the job index and each job's state once, then goes on from the
 * versions it read and wrote itself (every write of them is its own, conditional on that version: a write by anyone
 * else makes its next write fail and re-read). Before, every pass read both again — most of the leader's blob reads
 * while a job waits on its workers.
 */
import { describe, expect, it } from "vitest";
import { keys } from "../../src/coordination/jobState";
import { runCoordinationStep } from "../../src/coordination/step";
import { storeSubmission } from "../../src/coordination/submit";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

describe("a step's reads of the job index and job states", () => {
  it("four passes (results folded, more sent, then waiting on workers) read the index and the job once each", async () => {
    const w = world({ dispatchBatchSize: 20, maxInFlight: 20, workUnitMaxItems: 10 });
    const items = Array.from({ length: 40 }, (_, n) => item(`k${n % 3}`, n));
    const { id } = await storeSubmission(w.deps.system, { kind: "group-by", params, items });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(await work(w.deps, w.work)).toBe(2);
    const reads: string[] = [];
    const read = w.state.read.bind(w.state);
    w.state.read = (key: string) => {
      reads.push(key);
      return read(key);
    };
    const report = await runCoordinationStep(w.deps, fakeTerm(1), { budgetMs: 60_000, maxPasses: 4 });
    w.state.read = read;
    expect(report).toMatchObject({ passes: 4, folded: 20, dispatched: 20 });
    expect((await readJob(w.state, id))?.dispatched).toBe(40);
    expect(reads.filter((key) => key === keys.jobState(id))).toHaveLength(1);
    expect(reads.filter((key) => key === keys.index)).toHaveLength(1);
  });
});
