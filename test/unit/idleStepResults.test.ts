import { afterEach, describe, expect, it, vi } from "vitest";
import { IDLE_STEP_SURFACE_S, handleWorkMessage, runCoordinatorTick, submitJob } from "../../src/app/operations";
import { heldByOther } from "../support/FakeLeaseStore";
import { memoryApp } from "../support/memoryApp";
import { RESULT_VERSION } from "../../src/coordination/ports/messages";

/**
 * Issue 43, hole 3: a worker skips its `results-arrived` wake-up when its process has just seen a live, heartbeating
 * leader, trusting that leader's step to fold the result or its sentinel to start the next step in seconds. But a step
 * that moved nothing hides its sentinel for IDLE_STEP_SURFACE_S (30 s): a result sent just as such a step ended waited
 * about 30 s instead of about 2. Now a worker skips only while the leader's step has time left to fold it, and an idle
 * step that ends with a result nobody has received yet lets its sentinel start the next step at once.
 */

const params = { format: "csv", keyField: "region", valueField: "amount" };
const work = (item: number): string =>
  JSON.stringify({ v: 1, jobId: "job-1", item, kind: "group-by", params, input: { inline: "region,amount\neu,1" } });
const wakeReasons = (world: ReturnType<typeof memoryApp>) =>
  world.wakeQueue.bodies().map((body) => (JSON.parse(body) as { reason: string }).reason);

describe("a result sent as an idle step ends is folded in seconds (issue 43, hole 3)", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a worker whose watcher saw a live leader sends its wake-up when that leader's step is about to end", async () => {
    vi.useFakeTimers({ now: 1_000_000, toFake: ["Date"] });
    for (const [stepLeftMs, wakeUps] of [
      [15_000, 0], // the step has time to fold it: no wake-up (issue 35's saving)
      [500, 1], // the step ends in half a second and may end idle, its sentinel hidden for 30 s
    ] as const) {
      const store = heldByOther();
      store.record = { ...store.record, takeoverDeadlineMs: 6000, sinceMs: Date.now() - 20_000 + stepLeftMs };
      const world = memoryApp({
        store,
        settings: {
          STEP_BUDGET_MS: "20000",
          ACTIVITY_WAKE_INTERVAL_MS: "5000",
          LEADER_WATCH_INTERVAL_MS: "1000",
          LEADER_SENTINEL_SECONDS: "2",
        },
      });
      try {
        world.app.leaderWatch.activity();
        await vi.waitFor(() => {
          expect(world.app.leaderWatch.stats.reads).toBeGreaterThan(0);
        });
        await handleWorkMessage(world.app, world.sink, work(0), { id: "w0", dequeueCount: 1 });
        expect(world.resultsQueue.length).toBe(1);
        expect(wakeReasons(world)).toEqual(Array<string>(wakeUps).fill("results-arrived"));
      } finally {
        await world.app.leaderWatch.stop();
      }
    }
  });

  /**
   * A leader whose job waits on its workers: a step registered it and sent its unit; the sentinel that step left has
   * started the next (received, at 2 s on the wake queue's clock). Wake-ups from results off unless `settings` says.
   */
  async function waitingOnWorkers(settings: Record<string, string> = {}) {
    const world = memoryApp({ settings: { LEADER_SENTINEL_SECONDS: "2", STEP_BUDGET_MS: "1500", ...settings } });
    const job = { kind: "group-by", params, items: [{ inline: "region,amount\neu,1" }] };
    await submitJob(world.app, job, { wake: false });
    expect(await runCoordinatorTick(world.app, world.sink)).toBe("completed"); // registers and sends the unit
    await world.wakeQueue.receive(32, 600); // the announcement
    world.wakeQueue.nowMs = 2_000;
    await world.wakeQueue.receive(32, 600); // the sentinel that starts the next step
    return world;
  }

  it("an idle step that ends with a result nobody has received yet lets its sentinel start the next step within LEADER_SENTINEL_SECONDS, not 30 s later", async () => {
    // Wake-ups from results off: this worker's is the one skipped (it saw the leader live), and nothing else wakes.
    const world = await waitingOnWorkers({ ACTIVITY_WAKE_INTERVAL_MS: "0" });
    // The unit's result lands after the step's last look at the results queue (each receive of this step comes back
    // empty), before the step ends: a worker that saw this live leader sent no wake-up for it.
    const [unit] = await world.workQueue.receive(1, 600);
    const receive = world.resultsQueue.receive.bind(world.resultsQueue);
    world.resultsQueue.receive = () => Promise.resolve([]);
    await handleWorkMessage(world.app, world.sink, unit?.text ?? "", { id: "w0", dequeueCount: 1 });
    expect(await runCoordinatorTick(world.app, world.sink)).toBe("completed");
    world.resultsQueue.receive = receive;
    world.wakeQueue.nowMs = 2_000 + 2_000;
    expect(await world.wakeQueue.peek(32)).toHaveLength(1);
  });

  it("a result this leader leaves for another (a newer version's) does not make its idle steps start the next at once", async () => {
    const world = await waitingOnWorkers();
    await world.resultsQueue.send([
      JSON.stringify({ v: RESULT_VERSION + 1, jobId: "job-from-the-future", first: 0, count: 1 }),
    ]);
    expect(await runCoordinatorTick(world.app, world.sink)).toBe("completed");
    world.wakeQueue.nowMs = 2_000 + IDLE_STEP_SURFACE_S * 1000 - 1000;
    expect(await world.wakeQueue.peek(32)).toEqual([]);
    world.wakeQueue.nowMs = 2_000 + IDLE_STEP_SURFACE_S * 1000;
    expect(await world.wakeQueue.peek(32)).toHaveLength(1);
  });
});
