import { describe, expect, it } from "vitest";
import { handleWakeMessage, handleWorkMessage, runCoordinatorTick, submitJob } from "../../src/app/operations";
import { memoryApp } from "../support/memoryApp";

/**
 * Issue 37, item 6b: a step that fails every time (as hole 3's did) must not re-run every few seconds for ever. Its
 * sentinel, left to surface when the step fails, started the next step LEADER_SENTINEL_SECONDS later, which failed and
 * left it again: a step every 2–5 s with no back-off. Now each failure in a row puts the next step off twice as long,
 * up to the timer's minute, and a step that completes starts the count again.
 */
/** Submits a job of one item, runs a step (it registers and dispatches it) and the worker: its result waits. */
async function jobDoneByWorkers(world: ReturnType<typeof memoryApp>, amount: number): Promise<void> {
  const params = { format: "csv", keyField: "region", valueField: "amount" };
  const items = [{ inline: `region,amount\neu,${amount}` }];
  await submitJob(world.app, { kind: "group-by", params, items }, { wake: false });
  expect(await runCoordinatorTick(world.app, world.sink)).toBe("completed");
  for (const message of await world.workQueue.receive(32, 600))
    await handleWorkMessage(world.app, world.sink, JSON.parse(message.text ?? "null"), {
      id: message.id,
      dequeueCount: 1,
    });
}

describe("a step that fails every time (issue 37, item 6b)", () => {
  it("puts the next step off longer after each failure in a row, up to a minute, and not after a step that completes", async () => {
    const world = memoryApp({ settings: { LEADER_SENTINEL_SECONDS: "2", STEP_BUDGET_MS: "1500" } });
    await jobDoneByWorkers(world, 1); // registered, dispatched, processed: its result waits
    // From now on every step fails after arming its sentinel: the job completes, and its retention marker cannot be
    // written (storage refuses that one write), so the step throws and the job stays on the active list.
    const writeText = world.system.writeText.bind(world.system);
    let refuse = true;
    world.system.writeText = (name: string, text: string) =>
      refuse && name.startsWith("ended/") ? Promise.reject(new Error("refused (test)")) : writeText(name, text);

    /** Runs a tick (which fails), and says how many seconds later its sentinel surfaces to start the next step. */
    const failAndMeasure = async (): Promise<number> => {
      // Whatever an earlier step left (surfaced or not, an hour on): taken.
      world.wakeQueue.nowMs += 3_600_000;
      await world.wakeQueue.receive(32, 36_000);
      const before = world.wakeQueue.nowMs;
      await expect(runCoordinatorTick(world.app, world.sink)).rejects.toThrow("refused (test)");
      for (let s = 1; s <= 600; s++) {
        world.wakeQueue.nowMs = before + s * 1000;
        if ((await world.wakeQueue.peek(32)).length > 0) return s;
      }
      return Infinity;
    };
    const delays: number[] = [];
    for (let n = 0; n < 6; n++) delays.push(await failAndMeasure());
    expect(delays).toEqual([4, 8, 16, 32, 60, 60]);
    // A step that completes starts the count again.
    refuse = false;
    expect(await runCoordinatorTick(world.app, world.sink)).toBe("completed");
    refuse = true;
    await jobDoneByWorkers(world, 2); // registered, dispatched, processed: its result waits
    expect(await failAndMeasure()).toBe(4);
  });

  it("a wake-up whose step fails in its term is not delivered again by the host: the step's sentinel starts the next", async () => {
    const world = memoryApp({ settings: { LEADER_SENTINEL_SECONDS: "2", STEP_BUDGET_MS: "1500" } });
    await jobDoneByWorkers(world, 1); // registered, dispatched, processed: its result waits
    const writeText = world.system.writeText.bind(world.system);
    world.system.writeText = (name: string, text: string) =>
      name.startsWith("ended/") ? Promise.reject(new Error("refused (test)")) : writeText(name, text);
    const wake = { v: 1, reason: "leader-sentinel", from: "other", sentAtMs: Date.now() };
    // On its first delivery: handled (the host deletes it), not thrown back for a redelivery 5 s later.
    expect(await handleWakeMessage(world.app, world.sink, wake, { dequeueCount: 1 })).toBe("error");
  });
});
