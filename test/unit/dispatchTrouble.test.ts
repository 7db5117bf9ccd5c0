import { describe, expect, it } from "vitest";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { JOB_FORMAT_VERSION, keys } from "../../src/coordination/state/jobState";
import { requestCancel } from "../../src/coordination/jobs/cancel";
import type { BlobFiles } from "../../src/coordination/ports/ports";
import { StorageError } from "../../src/library/errors";
import { ONE_PASS, item, params, readJob, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Issue 43's suspicions about dispatch and the leader's listings, each settled with a test: a cursor write that keeps
 * failing for a reason other than a race (suspicion 2), and inbox and cancellation markers that a leader keeps where
 * they are (a newer version's, a job not registered yet), ahead of the others in name order (suspicion 3).
 */

const items = (count: number) => Array.from({ length: count }, (_, i) => item("a", i));

describe("a job whose cursor write keeps failing (issue 43, suspicion 2)", () => {
  it("is sent once in a step, not again at every pass; once the write succeeds the cursor is recorded without sending again", async () => {
    const { deps, work: queue, state } = world({ workUnitMaxItems: 4, dispatchBatchSize: 100, maxInFlight: 100 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(8) });
    // Storage refuses the job's writes once it exists (an immutability policy put on the container, a role removed):
    // not a race, so no re-read helps. The first 6 attempts fail.
    let refused = 0;
    state.beforeWrite = async (key) => {
      if (key !== keys.jobState(id) || (await state.read(key)) === undefined || refused >= 6) return;
      refused++;
      throw new StorageError("AuthorizationPermissionMismatch", 403, `Writing ${key} failed: 403 (simulated)`);
    };
    await runCoordinationStep(deps, fakeTerm(1), { budgetMs: 60_000, maxPasses: 10 });
    // Two units of 4 items, each sent once, however many passes tried to record the cursor.
    expect(queue.bodies().map((body) => (JSON.parse(body) as { first: number }).first)).toEqual([0, 4]);
    expect(refused).toBe(6);
    expect(await readJob(state, id)).toMatchObject({ status: "running", dispatched: 8 });
  });
});

describe("markers a leader keeps do not hold up the others (issue 43, suspicion 3)", () => {
  /** A job a newer version submitted: its spec is of a format version after this one's, left in the inbox. */
  async function newerJob(system: BlobFiles, n: number): Promise<string> {
    const id = `000-newer-${String(n).padStart(3, "0")}`;
    await system.writeText(
      keys.spec(id),
      JSON.stringify({ v: JOB_FORMAT_VERSION + 1, id, kind: "group-by", itemCount: 1 }),
    );
    await system.writeText(keys.inbox(id), "");
    return id;
  }

  it("a job submitted behind more than a listing's worth of a newer version's jobs is registered within a few steps", async () => {
    const { deps, state } = world();
    for (let n = 0; n < 120; n++) await newerJob(deps.system, n);
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(1) });
    for (let epoch = 1; epoch <= 3; epoch++) await runCoordinationStep(deps, fakeTerm(epoch), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "running" });
    // The newer version's jobs are still there, for a leader that reads them.
    expect(await deps.system.list(keys.inboxPrefix, 1000)).toHaveLength(120);
  });

  it("a cancellation behind more than a listing's worth of requests kept for later is applied within a few steps", async () => {
    const { deps, state } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(1) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // Requests for jobs still in the inbox (a newer version's: this leader never registers them) are kept until their
    // job registers; their names sort before the running job's.
    for (let n = 0; n < 120; n++) {
      const newer = await newerJob(deps.system, n);
      await deps.system.writeText(keys.cancel(newer), JSON.stringify({ v: 1, requestedAtMs: 1 }));
    }
    expect(await requestCancel(deps, id)).toEqual({ outcome: "requested", id });
    for (let epoch = 2; epoch <= 4; epoch++) await runCoordinationStep(deps, fakeTerm(epoch), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "cancelled" });
    expect(await deps.system.list(keys.cancelPrefix, 1000)).toHaveLength(120);
  });
});
