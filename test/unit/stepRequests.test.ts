/**
 * Issue 35, storage requests per item. A step asks the results queue once per fold while results trickle in (four
 * receives at once only for a backlog), and reads the job index and each job's state once, then goes on from the
 * versions it read and wrote itself (every write of them is its own, conditional on that version: a write by anyone
 * else makes its next write fail and re-read). Before, every pass read both again — most of the leader's blob reads
 * while a job waits on its workers.
 */
import { describe, expect, it } from "vitest";
import { keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

describe("a step's storage requests", () => {
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

  it("a pass with fewer results waiting than one receive takes asks the results queue once, not four times", async () => {
    const w = world({ dispatchBatchSize: 20, maxInFlight: 20, workUnitMaxItems: 10 });
    const items = Array.from({ length: 40 }, (_, n) => item(`k${n % 3}`, n));
    await storeSubmission(w.deps.system, { kind: "group-by", params, items });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(await work(w.deps, w.work)).toBe(2);
    let receives = 0;
    const receive = w.results.receive.bind(w.results);
    w.results.receive = (max: number, visibilityS: number) => {
      receives++;
      return receive(max, visibilityS);
    };
    expect(await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS)).toMatchObject({ folded: 20 });
    // 2 results: one receive of up to 32 answers all there is; the parallel receives are for a backlog.
    expect(receives).toBe(1);
  });
});
