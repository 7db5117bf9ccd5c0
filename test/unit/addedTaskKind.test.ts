import { describe, expect, it } from "vitest";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { Recorder } from "../support/recorder";
import { HOLD_PASSED_MS, ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * A rolling deploy that ADDS a task kind: instances still on the old version take work units of the new kind
 * (submitted and dispatched by upgraded instances). Such a worker must not fail the unit's items at once, though an
 * upgraded worker would do them: it throws the unit back for the host to retry (another instance, upgraded, may take
 * it), as it does a work message of a newer version, and rejects it with the reason only on its last delivery — so a
 * kind no instance has (removed by a deploy) still ends its items as failed.
 */
describe("a task kind added by a rolling deploy", () => {
  it("a not-yet-upgraded worker does not fail the items of a kind the upgraded workers have", async () => {
    const { deps, work: queue, state } = world({ workUnitMaxItems: 2 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by", // the kind this deploy adds
      params,
      items: [item("a", 1), item("a", 2), item("a", 3), item("a", 4)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // an upgraded leader dispatches both units
    const old = { ...deps, registry: new TaskRegistry() }; // an instance of the version before the kind
    const [first] = await queue.receive(1, 60);
    if (first === undefined) throw new Error("no work message");
    const outcome = await processWorkMessage(old, JSON.parse(first.rawText) as unknown, {
      id: first.id,
      dequeueCount: first.dequeueCount,
      maxDequeueCount: 5,
    }).catch(() => ({ status: "thrown back" as const }));
    expect(outcome.status).toBe("thrown back");
    queue.nowMs += 120_000; // a thrown-back message is visible again; the deploy has finished meanwhile
    await work(deps, queue); // upgraded workers
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 4, failedCount: 0 });
  });

  it("a kind no worker has: thrown back with the reason logged on deliveries 1–4, nothing sent; rejected with it on the last, and the job ends with its items failed", async () => {
    const recorder = new Recorder();
    const { deps, work: queue, results, poison, state, clock } = world({ workUnitMaxItems: 2 });
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [item("a", 1), item("a", 2)],
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const without = { ...deps, registry: new TaskRegistry(), logger: recorder.logger };
    for (let delivery = 1; delivery <= 5; delivery++) {
      const [message] = await queue.receive(1, 60);
      if (message === undefined) throw new Error(`no work message at delivery ${delivery}`);
      expect(message.dequeueCount).toBe(delivery);
      const handled = processWorkMessage(without, JSON.parse(message.rawText) as unknown, {
        id: message.id,
        dequeueCount: message.dequeueCount,
        maxDequeueCount: 5,
      });
      if (delivery < 5) {
        await expect(handled).rejects.toThrow(/unknown task kind "group-by".*delivery \d of 5/);
        expect({ results: results.length, poison: poison.length }).toEqual({ results: 0, poison: 0 });
        queue.nowMs += 60_000;
      } else {
        await expect(handled).resolves.toMatchObject({ status: "rejected" });
        await queue.delete(message);
      }
    }
    expect(recorder.logs.filter((log) => log.level === "warn" && /unknown task kind/.test(log.message))).toHaveLength(
      5,
    );
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // held: another copy of the unit could still be done
    clock.ms += HOLD_PASSED_MS;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 0, failedCount: 2 });
    expect(job?.failures[0]?.reason).toMatch(/^rejected by the worker: unknown task kind "group-by"; known kinds: $/);
  });
});
