import { afterEach, describe, expect, it, vi } from "vitest";
import { handleWakeMessage, handleWorkMessage } from "../../src/app/operations";
import { FakeLeaseStore } from "../support/FakeLeaseStore";
import { memoryApp } from "../support/memoryApp";

/**
 * Wake-ups from queue activity: a worker that sends a result (or poison) wakes the coordinator, at most once per
 * ACTIVITY_WAKE_INTERVAL_MS per process; a wake-up that finds the lease held sends one follow-up, delayed by a lease
 * duration, so a leader that died holding the lease is replaced when its lease runs out, not at the next timer tick.
 */

const params = { format: "csv", keyField: "region", valueField: "amount" };
const work = (item: number): string => JSON.stringify({ v: 1, jobId: "job-1", item, kind: "group-by", params, input: { inline: "region,amount\neu,1" } });
const delivery = (id: string) => ({ id, dequeueCount: 1 });
const wakeBodies = (world: ReturnType<typeof memoryApp>) => world.wakeQueue.bodies().map((body) => JSON.parse(body) as Record<string, unknown>);

/** A lease held by another instance for the next 15 s. */
function heldByOther(): FakeLeaseStore {
  const store = new FakeLeaseStore();
  store.leaseId = "other-lease";
  store.expiresAtMs = Date.now() + 15_000;
  store.durationS = 15;
  store.record = { holder: "other-1", epoch: 7, sinceMs: Date.now(), transitions: 7 };
  return store;
}

describe("wake-ups from queue activity", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a worker that sent a result wakes the coordinator once; more results within the interval send no more wake-ups", async () => {
    vi.useFakeTimers({ now: 1_000_000, toFake: ["Date"] });
    const world = memoryApp({ settings: { ACTIVITY_WAKE_INTERVAL_MS: "5000" } });
    for (let item = 0; item < 5; item++) expect(await handleWorkMessage(world.app, world.sink, work(item), delivery(`w${item}`))).toMatchObject({ status: "processed" });
    expect(world.resultsQueue.length).toBe(5);
    expect(wakeBodies(world)).toEqual([expect.objectContaining({ v: 1, reason: "results-arrived", jobId: "job-1", from: "unit-wake" })]);
    vi.setSystemTime(1_005_000);
    await handleWorkMessage(world.app, world.sink, work(5), delivery("w5"));
    expect(wakeBodies(world).map((body) => body.reason)).toEqual(["results-arrived", "results-arrived"]);
  });

  it("a malformed work message moved to poison wakes the coordinator too (poison-arrived)", async () => {
    const world = memoryApp({ settings: { ACTIVITY_WAKE_INTERVAL_MS: "5000" } });
    expect(await handleWorkMessage(world.app, world.sink, "{not json", delivery("bad"))).toMatchObject({ status: "rejected" });
    expect(wakeBodies(world)).toEqual([expect.objectContaining({ reason: "poison-arrived" })]);
  });

  it("ACTIVITY_WAKE_INTERVAL_MS=0 turns them off: results send no wake-up", async () => {
    const world = memoryApp({ settings: { ACTIVITY_WAKE_INTERVAL_MS: "0" } });
    await handleWorkMessage(world.app, world.sink, work(0), delivery("w0"));
    expect(world.resultsQueue.length).toBe(1);
    expect(world.wakeQueue.length).toBe(0);
  });

  it("a wake-up that finds the lease held sends one follow-up, invisible for a lease duration; the chain ends after 3", async () => {
    vi.useFakeTimers({ now: 2_000_000, toFake: ["Date"] });
    const world = memoryApp({ store: heldByOther(), settings: { ACTIVITY_WAKE_INTERVAL_MS: "5000" } });
    const wake = JSON.stringify({ v: 1, reason: "results-arrived", jobId: "job-1", sentAtMs: Date.now(), from: "worker-x" });
    expect(await handleWakeMessage(world.app, world.sink, wake, { dequeueCount: 1 })).toBe("not-acquired");
    expect(wakeBodies(world)).toEqual([expect.objectContaining({ reason: "results-arrived", jobId: "job-1", followUp: 1, from: "unit-wake" })]);
    // Invisible until the lease the holder may have renewed just before has run out.
    expect(await world.wakeQueue.receive(32, 30)).toEqual([]);
    world.wakeQueue.nowMs = 15_000;
    const [followUp] = await world.wakeQueue.receive(32, 30);
    expect(followUp?.text).toBeDefined();
    // The last link of a chain sends no further follow-up.
    vi.setSystemTime(2_100_000);
    const last = JSON.stringify({ v: 1, reason: "results-arrived", sentAtMs: Date.now(), from: "unit-wake", followUp: 3 });
    world.store.expiresAtMs = Date.now() + 15_000;
    expect(await handleWakeMessage(world.app, world.sink, last, { dequeueCount: 1 })).toBe("not-acquired");
    expect(world.wakeQueue.length).toBe(1);
  });
});
