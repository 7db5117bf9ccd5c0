import { describe, expect, it } from "vitest";
import { createRegistry } from "../../scripts/support/repoKinds";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Results of a task kind that a deploy removed: the workers reported before the deploy, and now no leader has the
 * kind. A leader without a job's kind leaves its valid results for one that has it (a deploy in progress, a kind on
 * some instances only), but not for ever: a result no leader could fold for an hour after it was sent fails its items
 * with the reason, and the job ends. (The README handles the same case for work messages: the worker rejects them on
 * their last delivery.)
 */
describe("results of a task kind no process has any more", () => {
  /** A job of three items in units of 2, dispatched and worked by the version with group-by, then that kind removed. */
  async function removedAfterWork() {
    const made = world({ workUnitMaxItems: 2 });
    const { deps, work: queue } = made;
    const items = [item("a", 1), item("b", 2), item("a", 3)];
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // registered and dispatched by the old version
    await work(deps, queue); // its workers reported: two unit results wait on the results queue
    expect(createRegistry().get("group-by")).toBeDefined();
    return { ...made, id, deployed: { ...deps, registry: new TaskRegistry() } }; // the new version dropped "group-by"
  }

  it("the job still ends, its items failed with a reason, instead of running for ever (a tick a minute for 3 hours)", async () => {
    const { deployed, results, state, id } = await removedAfterWork();
    for (let step = 2; step < 200; step++) {
      await runCoordinationStep(deployed, fakeTerm(step), ONE_PASS);
      results.nowMs += 60_000;
    }
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 0, failedCount: 3 });
    expect(job?.failures.map((failure) => failure.reason)).toEqual(
      Array(3).fill(
        expect.stringMatching(
          /^this leader lacks task kind "group-by" .*, and no leader with it folded the unit's result in the hour since it was sent/,
        ),
      ),
    );
    expect(results.length).toBe(0);
  });

  it("a result is left for a leader with the kind until it has waited an hour on the queue, and failed after", async () => {
    const { deployed, results, state, id } = await removedAfterWork();
    results.nowMs += 59 * 60_000;
    await runCoordinationStep(deployed, fakeTerm(2), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "running", doneCount: 0, failedCount: 0 });
    expect(results.length).toBe(2);
    results.nowMs += 60_000;
    await runCoordinationStep(deployed, fakeTerm(3), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 0, failedCount: 3 });
    // A leader with the kind, had it come in time, would have folded them: shown with a fresh copy of the job.
    const again = await removedAfterWork();
    again.results.nowMs += 59 * 60_000;
    await runCoordinationStep(again.deps, fakeTerm(2), ONE_PASS);
    expect(await readJob(again.state, again.id)).toMatchObject({ status: "completed", doneCount: 3 });
  });
});
