import { afterEach, describe, expect, it, vi } from "vitest";
import { handleWakeMessage, handleWorkMessage, runCoordinatorTick, submitJob } from "../../src/app/operations";
import { heldByOther } from "../support/FakeLeaseStore";
import { memoryApp } from "../support/memoryApp";

/**
 * Wake-ups from queue activity: a worker that sends a result (or poison) wakes the coordinator, at most once per
 * ACTIVITY_WAKE_INTERVAL_MS per process; a wake-up that finds the lease held (or its own process busy) sends one
 * follow-up an interval later, chained for three lease durations, so a leader that died holding the lease is replaced
 * when its lease runs out, not at the next timer tick.
 */

const params = { format: "csv", keyField: "region", valueField: "amount" };
const work = (item: number): string =>
  JSON.stringify({ v: 1, jobId: "job-1", item, kind: "group-by", params, input: { inline: "region,amount\neu,1" } });
const delivery = (id: string) => ({ id, dequeueCount: 1 });
const wakeBodies = (world: ReturnType<typeof memoryApp>) =>
  world.wakeQueue.bodies().map((body) => JSON.parse(body) as Record<string, unknown>);

describe("wake-ups from queue activity", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a worker that sent a result wakes the coordinator once; more results within the interval send no more wake-ups", async () => {
    vi.useFakeTimers({ now: 1_000_000, toFake: ["Date"] });
    const world = memoryApp({ settings: { ACTIVITY_WAKE_INTERVAL_MS: "5000" } });
    for (let item = 0; item < 5; item++)
      expect(await handleWorkMessage(world.app, world.sink, work(item), delivery(`w${item}`))).toMatchObject({
        status: "processed",
      });
    expect(world.resultsQueue.length).toBe(5);
    expect(wakeBodies(world)).toEqual([
      expect.objectContaining({ v: 1, reason: "results-arrived", jobId: "job-1", from: "unit-wake" }),
    ]);
    vi.setSystemTime(1_005_000);
    await handleWorkMessage(world.app, world.sink, work(5), delivery("w5"));
    expect(wakeBodies(world).map((body) => body.reason)).toEqual(["results-arrived", "results-arrived"]);
  });

  it("a worker whose watcher has just seen a live leader (heartbeating, with a sentinel) sends no results-arrived wake-up", async () => {
    vi.useFakeTimers({ now: 1_000_000, toFake: ["Date"] });
    const watched = (store: ReturnType<typeof heldByOther>) =>
      memoryApp({
        store,
        settings: {
          ACTIVITY_WAKE_INTERVAL_MS: "5000",
          LEADER_WATCH_INTERVAL_MS: "1000",
          LEADER_SENTINEL_SECONDS: "2",
          // The holder's step began just now and runs its budget: time to fold the result (`idleStepResults.test.ts`).
          STEP_BUDGET_MS: "20000",
        },
      });
    const live = heldByOther();
    live.record = { ...live.record, takeoverDeadlineMs: 6000 };
    // A holder that does not heartbeat: nobody can tell it is alive, so its workers' wake-ups go on as before.
    const silent = heldByOther();
    for (const [store, wakeUps] of [
      [live, 0],
      [silent, 1],
    ] as const) {
      const world = watched(store);
      try {
        // A worker or wake-up invocation arms this process's watcher: its first read of the lease.
        world.app.leaderWatch.activity();
        await vi.waitFor(() => {
          expect(world.app.leaderWatch.stats.reads).toBeGreaterThan(0);
        });
        await handleWorkMessage(world.app, world.sink, work(0), delivery("w0"));
        expect(world.resultsQueue.length).toBe(1);
        // Each wake-up costs a send, a receive, a delete and a wake execution's lease read: the step folds anyway.
        expect(wakeBodies(world).map((body) => body.reason)).toEqual(Array<string>(wakeUps).fill("results-arrived"));
      } finally {
        await world.app.leaderWatch.stop();
      }
    }
  });

  it("a malformed work message moved to poison wakes the coordinator too (poison-arrived)", async () => {
    const world = memoryApp({ settings: { ACTIVITY_WAKE_INTERVAL_MS: "5000" } });
    expect(await handleWorkMessage(world.app, world.sink, "{not json", delivery("bad"))).toMatchObject({
      status: "rejected",
    });
    expect(wakeBodies(world)).toEqual([expect.objectContaining({ reason: "poison-arrived" })]);
  });

  it("ACTIVITY_WAKE_INTERVAL_MS=0 turns them off: results send no wake-up", async () => {
    const world = memoryApp({ settings: { ACTIVITY_WAKE_INTERVAL_MS: "0" } });
    await handleWorkMessage(world.app, world.sink, work(0), delivery("w0"));
    expect(world.resultsQueue.length).toBe(1);
    expect(world.wakeQueue.length).toBe(0);
  });

  it("a wake-up that finds the lease held sends one follow-up, invisible for one interval; the chain ends after three lease durations", async () => {
    vi.useFakeTimers({ now: 2_000_000, toFake: ["Date"] });
    const world = memoryApp({ store: heldByOther(), settings: { ACTIVITY_WAKE_INTERVAL_MS: "5000" } });
    const wake = JSON.stringify({
      v: 1,
      reason: "results-arrived",
      jobId: "job-1",
      sentAtMs: Date.now(),
      from: "worker-x",
    });
    expect(await handleWakeMessage(world.app, world.sink, wake, { dequeueCount: 1 })).toBe("not-acquired");
    expect(wakeBodies(world)).toEqual([
      expect.objectContaining({ reason: "results-arrived", jobId: "job-1", followUp: 1, from: "unit-wake" }),
    ]);
    // Invisible for one interval (5 s).
    expect(await world.wakeQueue.receive(32, 30)).toEqual([]);
    world.wakeQueue.nowMs = 5_000;
    const [followUp] = await world.wakeQueue.receive(32, 30);
    expect(followUp?.text).toBeDefined();
    // 15 s lease, 5 s interval: 9 links; the 9th sends no further follow-up.
    vi.setSystemTime(2_100_000);
    world.store.expiresAtMs = Date.now() + 15_000;
    const link = (n: number): string =>
      JSON.stringify({ v: 1, reason: "results-arrived", sentAtMs: Date.now(), from: "unit-wake", followUp: n });
    expect(await handleWakeMessage(world.app, world.sink, link(9), { dequeueCount: 1 })).toBe("not-acquired");
    expect(world.wakeQueue.length).toBe(1);
    expect(await handleWakeMessage(world.app, world.sink, link(8), { dequeueCount: 1 })).toBe("not-acquired");
    expect(wakeBodies(world).map((body) => body.followUp)).toEqual([1, 9]);
  });

  it("a wake-up coalesced into this process's own step sends a follow-up too: the process may die in that step", async () => {
    const world = memoryApp({ settings: { ACTIVITY_WAKE_INTERVAL_MS: "5000", STEP_BUDGET_MS: "1000" } });
    await submitJob(
      world.app,
      { kind: "group-by", params, items: [{ inline: "region,amount\neu,1" }] },
      { wake: false },
    );
    // Nobody works on the job, so the step polls for its whole budget (1 s).
    const tick = runCoordinatorTick(world.app, world.sink);
    while (!world.events.some((event) => event.type === "job-registered"))
      await new Promise((done) => setTimeout(done, 10));
    const wake = JSON.stringify({ v: 1, reason: "results-arrived", sentAtMs: Date.now(), from: "worker-y" });
    expect(await handleWakeMessage(world.app, world.sink, wake, { dequeueCount: 1 })).toBe("coalesced");
    expect(wakeBodies(world)).toEqual([expect.objectContaining({ reason: "results-arrived", followUp: 1 })]);
    expect(await tick).toBe("completed");
  });
});
