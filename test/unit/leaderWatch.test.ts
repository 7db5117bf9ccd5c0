import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { electorTimings } from "../../src/app/context";
import { handleWakeMessage, handleWorkMessage, runCoordinatorTick } from "../../src/app/operations";
import { readSettings } from "../../src/app/settings";
import { LeaderWatch } from "../../src/coordination/wake/leaderWatch";
import { ConfigurationError } from "../../src/library/errors";
import type { LeaderElector } from "../../src/library/leadership/LeaderElector";
import { fakeElector, untilAborted } from "../support/electorHarness";
import { FakeLeaseStore } from "../support/FakeLeaseStore";
import { LeaseStoreView } from "../support/LeaseStoreView";
import { memoryApp } from "../support/memoryApp";
import { MemoryQueue } from "../support/memoryPorts";
import { Recorder } from "../support/recorder";

/**
 * Issue 22, "someone must be watching": between timer ticks nobody runs, so a process that is busy anyway (worker and
 * wake-up invocations) reads the lease once a second for three lease durations after its last invocation, breaks a
 * silent leader's lease and sends one wake-up; nothing runs when no invocation came.
 */
describe("LeaderWatch (unit, fake timers)", () => {
  let store: FakeLeaseStore;
  let wakeQueue: MemoryQueue;
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
    store = new FakeLeaseStore();
    wakeQueue = new MemoryQueue("wake");
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  const reads = (): number => store.calls.filter((call) => call === "read").length;
  const watcherOf = (elector: LeaderElector, intervalMs = 1000, abortSignal?: AbortSignal): LeaderWatch =>
    new LeaderWatch(elector, wakeQueue, {
      intervalMs,
      windowMs: 45_000,
      from: "unit-b",
      monotonicMs: () => Date.now(),
      random: () => 0.5,
      abortSignal,
    });
  /** A leader on its own view of the store (cut it to kill it), and a contender's elector with its watcher. */
  async function leaderAndWatcher(intervalMs = 1000): Promise<{ viewA: LeaseStoreView; watch: LeaderWatch }> {
    const viewA = new LeaseStoreView(store);
    void fakeElector(store, new Recorder(), { store: viewA, instanceId: "unit-a", takeover: true }).tryLead(
      untilAborted,
    );
    await vi.advanceTimersByTimeAsync(100);
    const b = fakeElector(store, new Recorder(), { instanceId: "unit-b", takeover: true });
    return { viewA, watch: watcherOf(b, intervalMs) };
  }

  it("reads nothing until an invocation arms it, once a second while armed, and nothing after its window", async () => {
    const { watch } = await leaderAndWatcher();
    const before = reads();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(reads()).toBe(before);
    watch.activity();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(reads() - before).toBeGreaterThanOrEqual(9);
    expect(reads() - before).toBeLessThanOrEqual(11);
    await vi.advanceTimersByTimeAsync(40_000);
    expect(watch.watching).toBe(false);
    const after = reads();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(reads()).toBe(after);
    expect(watch.stats.breaks).toBe(0);
    expect(wakeQueue.length).toBe(0);
  });

  it("breaks a leader that fell silent, once, sends one wake-up (leader-silent), and never acquires", async () => {
    const { viewA, watch } = await leaderAndWatcher();
    watch.activity();
    await vi.advanceTimersByTimeAsync(3_000);
    viewA.cut = true;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(watch.stats.breaks).toBe(1);
    expect(wakeQueue.bodies().map((body) => JSON.parse(body) as unknown)).toEqual([
      expect.objectContaining({ v: 1, reason: "leader-silent", from: "unit-b" }),
    ]);
    expect(store.holderLeaseId()).toBeUndefined();
    expect(store.record).toMatchObject({ holder: "unit-a", brokenBy: "unit-b" });
  });

  it("never breaks a leader whose heartbeats succeed", async () => {
    const { watch } = await leaderAndWatcher();
    watch.activity();
    await vi.advanceTimersByTimeAsync(40_000);
    expect(watch.stats.reads).toBeGreaterThan(30);
    expect(watch.stats.breaks).toBe(0);
    expect(store.record.holder).toBe("unit-a");
  });

  it("reads nothing while its own elector has a term in progress", async () => {
    const a = fakeElector(store, new Recorder(), { instanceId: "unit-a", takeover: true });
    void a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(100);
    const watch = watcherOf(a);
    const before = reads();
    watch.activity();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(reads()).toBe(before);
  });

  it("interval 0 turns it off; the process's shutdown stops it", async () => {
    const { watch: off } = await leaderAndWatcher(0);
    off.activity();
    expect(off.watching).toBe(false);
    const shutdown = new AbortController();
    const watch = watcherOf(
      fakeElector(store, new Recorder(), { instanceId: "unit-c", takeover: true }),
      1000,
      shutdown.signal,
    );
    watch.activity();
    await vi.advanceTimersByTimeAsync(2_000);
    expect(watch.watching).toBe(true);
    shutdown.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(watch.watching).toBe(false);
    const before = reads();
    watch.activity();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(reads()).toBe(before);
  });
});

describe("the app's takeover wiring", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a worker invocation and a wake-up invocation arm the watcher; a timer tick does not", async () => {
    const world = memoryApp({ settings: { LEADER_WATCH_INTERVAL_MS: "1000" } });
    await runCoordinatorTick(world.app, world.sink);
    expect(world.app.leaderWatch.watching).toBe(false);
    const work = JSON.stringify({
      v: 1,
      jobId: "job-1",
      item: 0,
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      input: { inline: "region,amount\neu,1" },
    });
    await handleWorkMessage(world.app, world.sink, work, { id: "w0", dequeueCount: 1 });
    expect(world.app.leaderWatch.watching).toBe(true);
    await world.app.leaderWatch.stop();
    const again = memoryApp({ settings: { LEADER_WATCH_INTERVAL_MS: "1000" } });
    const wake = JSON.stringify({ v: 1, reason: "leader-silent", sentAtMs: Date.now(), from: "unit-b" });
    expect(await handleWakeMessage(again.app, again.sink, wake, { dequeueCount: 1 })).toBe("completed");
    expect(again.app.leaderWatch.watching).toBe(true);
    await again.app.leaderWatch.stop();
  });

  it("the app's leader heartbeats with its takeover deadline in its record; LEASE_TAKEOVER_DEADLINE_MS=0 writes none", async () => {
    const on = memoryApp();
    await runCoordinatorTick(on.app, on.sink);
    expect(on.store.record).toMatchObject({ epoch: 1, takeoverDeadlineMs: 2500 });
    const off = memoryApp({ settings: { LEASE_TAKEOVER_DEADLINE_MS: "0" } });
    await runCoordinatorTick(off.app, off.sink);
    expect(off.store.record.epoch).toBe(1);
    expect(off.store.record.takeoverDeadlineMs).toBeUndefined();
    expect(off.app.leaderWatch.watching).toBe(false);
  });
});

describe("takeover settings", () => {
  it("applies the documented defaults and hands them to the elector", () => {
    const settings = readSettings({});
    expect(settings).toMatchObject({
      LEASE_TAKEOVER_DEADLINE_MS: 2500,
      LEASE_HEARTBEAT_INTERVAL_MS: 1000,
      LEADER_WATCH_INTERVAL_MS: 1000,
    });
    expect(electorTimings(settings)).toMatchObject({
      takeover: true,
      heartbeatIntervalMs: 1000,
      takeoverDeadlineMs: 2500,
    });
    expect(electorTimings(readSettings({ LEASE_TAKEOVER_DEADLINE_MS: "0" }))).toMatchObject({ takeover: false });
  });

  it.each([
    [
      { LEASE_HEARTBEAT_INTERVAL_MS: "2500" },
      "LEASE_HEARTBEAT_INTERVAL_MS (2500) must be above 0 and below LEASE_TAKEOVER_DEADLINE_MS (2500)",
    ],
    [
      { LEASE_TAKEOVER_DEADLINE_MS: "10000" },
      "LEASE_TAKEOVER_DEADLINE_MS (10000) must be below LEASE_RENEW_DEADLINE_MS (10000)",
    ],
    [{ LEADER_WATCH_INTERVAL_MS: "100" }, 'LEADER_WATCH_INTERVAL_MS="100" must be 0 (off) or from 250 to 60000'],
    [{ LEASE_TAKEOVER_DEADLINE_MS: "-1" }, 'LEASE_TAKEOVER_DEADLINE_MS="-1" must be from 0 to 53000'],
  ])("refuses %o, naming the settings and what is allowed", (env, message) => {
    expect(() => readSettings(env)).toThrow(ConfigurationError);
    expect(() => readSettings(env)).toThrow(message);
  });

  it("checks the heartbeat interval only while takeover is on (LEASE_TAKEOVER_DEADLINE_MS=0 turns it off)", () => {
    expect(readSettings({ LEASE_TAKEOVER_DEADLINE_MS: "0", LEASE_HEARTBEAT_INTERVAL_MS: "9000" })).toMatchObject({
      LEASE_TAKEOVER_DEADLINE_MS: 0,
    });
  });
});
