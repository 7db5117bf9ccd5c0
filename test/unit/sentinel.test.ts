import { afterEach, describe, expect, it, vi } from "vitest";
import {
  IDLE_STEP_SURFACE_S,
  handleWakeMessage,
  handleWorkMessage,
  runCoordinatorTick,
  submitJob,
} from "../../src/app/operations";
import type { MessageReceipt } from "../../src/coordination/ports/ports";
import { LeaderSentinel } from "../../src/coordination/wake/sentinel";
import { delay } from "../../src/library/util/delay";
import { silentLogger } from "../../src/library/util/logger";
import { heldByOther } from "../support/FakeLeaseStore";
import { memoryApp } from "../support/memoryApp";
import { MemoryQueue } from "../support/memoryPorts";

/**
 * The leader's sentinel (issue 22): while a step has active jobs, one wake-up stays hidden on the wake queue; a leader
 * that dies stops hiding it, so it surfaces within LEADER_SENTINEL_SECONDS and some instance looks — even when no other
 * instance was busy.
 */

const params = { format: "csv", keyField: "region", valueField: "amount" };

/** A queue on the fake clock. */
function clockedQueue(): MemoryQueue {
  const queue = new MemoryQueue("wake");
  Object.defineProperty(queue, "nowMs", { get: () => Date.now() });
  return queue;
}

describe("the leader's sentinel", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("stays hidden while its leader lives (a minute: nobody can receive it), hidden again every half period", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const queue = clockedQueue();
    const sentinel = new LeaderSentinel(queue, { hiddenS: 2, from: "leader-1", logger: silentLogger });
    sentinel.arm();
    for (let ms = 0; ms < 60_000; ms += 250) {
      await vi.advanceTimersByTimeAsync(250);
      expect(await queue.peek(32)).toEqual([]);
    }
    expect(queue.length).toBe(1);
    expect(sentinel.stats).toMatchObject({ sent: 1, failures: 0 });
    expect(sentinel.stats.hidden).toBeGreaterThanOrEqual(59);
    await sentinel.end({ remove: true });
    expect(queue.length).toBe(0);
  });

  it("surfaces within its period once its leader stops hiding it (the term ended, or the process died), as a wake-up", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const queue = clockedQueue();
    const term = new AbortController();
    const sentinel = new LeaderSentinel(queue, { hiddenS: 2, from: "leader-1", logger: silentLogger });
    sentinel.arm({ abortSignal: term.signal });
    await vi.advanceTimersByTimeAsync(10_000);
    term.abort();
    const stoppedAt = Date.now();
    let surfacedAt: number | undefined;
    while (surfacedAt === undefined && Date.now() - stoppedAt < 5_000) {
      await vi.advanceTimersByTimeAsync(100);
      if ((await queue.peek(32)).length > 0) surfacedAt = Date.now();
    }
    expect(surfacedAt).toBeDefined();
    expect((surfacedAt ?? Infinity) - stoppedAt).toBeLessThanOrEqual(2_000 + 100);
    const [message] = await queue.receive(32, 30);
    expect(JSON.parse(message?.text ?? "null")).toMatchObject({ v: 1, reason: "leader-sentinel", from: "leader-1" });
  });

  it("end({ remove: false }) leaves it to surface (the next step), end({ remove: true }) deletes it", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const queue = clockedQueue();
    const kept = new LeaderSentinel(queue, { hiddenS: 2, from: "a", logger: silentLogger });
    kept.arm();
    await vi.advanceTimersByTimeAsync(3_000);
    await kept.end({ remove: false });
    await vi.advanceTimersByTimeAsync(2_100);
    expect(await queue.peek(32)).toHaveLength(1);
    await queue.receive(32, 600);
    const removed = new LeaderSentinel(queue, { hiddenS: 2, from: "b", logger: silentLogger });
    removed.arm();
    await vi.advanceTimersByTimeAsync(3_000);
    await removed.end({ remove: true });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await queue.peek(32)).toEqual([]);
    expect(removed.stats.deleted).toBe(1);
  });

  it("a failed send is retried at the next half period and logged, never thrown", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const queue = clockedQueue();
    const warnings: string[] = [];
    let failures = 2;
    const sendHidden = queue.sendHidden.bind(queue);
    queue.sendHidden = (...args) =>
      failures-- > 0 ? Promise.reject(new Error("storage unavailable (test)")) : sendHidden(...args);
    const sentinel = new LeaderSentinel(queue, {
      hiddenS: 2,
      from: "leader-1",
      logger: { ...silentLogger, warn: (message: string) => warnings.push(message) },
    });
    sentinel.arm();
    await vi.advanceTimersByTimeAsync(2_500);
    expect(sentinel.stats).toMatchObject({ sent: 1, failures: 2 });
    expect(warnings[0]).toContain("could not send its sentinel wake-up: storage unavailable (test)");
    await sentinel.end({ remove: true });
    expect(queue.length).toBe(0);
  });

  it("a request that hangs is abandoned after hiddenS on the process's own timers (a simulator's virtual clock too)", async () => {
    // AbortSignal.timeout runs on a timer no fake clock replaces: the simulator's runs then depended on real time (a
    // hung hide aborted or not by how loaded the machine was), so the same seed could pass in one batch and fail in
    // another.
    vi.useFakeTimers({ now: 1_000_000 });
    const queue = clockedQueue();
    let hung = 1;
    const sendHidden = queue.sendHidden.bind(queue);
    queue.sendHidden = (text: string, hiddenS: number, options?: { abortSignal?: AbortSignal }) =>
      hung-- > 0
        ? new Promise<MessageReceipt>((_, fail) =>
            options?.abortSignal?.addEventListener("abort", () => fail(new Error("aborted (test)")), { once: true }),
          )
        : sendHidden(text, hiddenS);
    const sentinel = new LeaderSentinel(queue, { hiddenS: 2, from: "leader-1", logger: silentLogger });
    sentinel.arm();
    await vi.advanceTimersByTimeAsync(2_100);
    expect(sentinel.stats.failures).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sentinel.stats.sent).toBe(1);
    await sentinel.end({ remove: true });
  });

  it("a sentinel that could not be sent at all still starts the next step: ending it leaves a plain delayed wake-up", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const queue = clockedQueue();
    queue.sendHidden = () => Promise.reject(new Error("storage unavailable (test)"));
    const sentinel = new LeaderSentinel(queue, { hiddenS: 2, from: "leader-1", logger: silentLogger });
    sentinel.arm();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(queue.length).toBe(0);
    await sentinel.end({ remove: false });
    expect(queue.length).toBe(1);
    expect(await queue.peek(32)).toEqual([]);
    await vi.advanceTimersByTimeAsync(2_000);
    const [message] = await queue.receive(32, 30);
    expect(JSON.parse(message?.text ?? "null")).toMatchObject({ reason: "leader-sentinel" });
  });

  it("ending it waits for the request in flight rather than cancelling it, and deletes with the receipt that request gave", async () => {
    vi.useFakeTimers({ now: 1_000_000 });
    const queue = clockedQueue();
    const hide = queue.hide.bind(queue);
    let slow = false;
    queue.hide = async (
      message: MessageReceipt,
      visibilityTimeoutS: number,
      options?: { abortSignal?: AbortSignal; text?: string },
    ) => {
      if (slow) await delay(500, { abortSignal: options?.abortSignal });
      return hide(message, visibilityTimeoutS, options);
    };
    const sentinel = new LeaderSentinel(queue, { hiddenS: 2, from: "leader-1", logger: silentLogger });
    sentinel.arm();
    await vi.advanceTimersByTimeAsync(1_500);
    slow = true;
    await vi.advanceTimersByTimeAsync(600); // a hide is in flight now
    const ended = sentinel.end({ remove: true });
    await vi.advanceTimersByTimeAsync(1_000);
    await ended;
    expect(sentinel.stats).toMatchObject({ deleted: 1, failures: 0 });
    expect(queue.length).toBe(0);
  });

  it("a step that moved nothing lets its sentinel start the next step 30 s later; one that moved something, within 2 s", async () => {
    const world = memoryApp({ settings: { LEADER_SENTINEL_SECONDS: "2", STEP_BUDGET_MS: "1500" } });
    await submitJob(
      world.app,
      { kind: "group-by", params, items: [{ inline: "region,amount\neu,1" }] },
      { wake: false },
    );
    // This step registers and dispatches the job (nobody works on it): within 2 s.
    expect(await runCoordinatorTick(world.app, world.sink)).toBe("completed");
    await world.wakeQueue.receive(32, 600); // the announcement
    world.wakeQueue.nowMs = 2_000;
    expect(await world.wakeQueue.peek(32)).toHaveLength(1);
    await world.wakeQueue.receive(32, 600);
    // The next step finds nothing to do, only waits: 30 s.
    expect(await runCoordinatorTick(world.app, world.sink)).toBe("completed");
    world.wakeQueue.nowMs = 2_000 + 29_000;
    expect(await world.wakeQueue.peek(32)).toEqual([]);
    world.wakeQueue.nowMs = 2_000 + IDLE_STEP_SURFACE_S * 1000;
    expect(await world.wakeQueue.peek(32)).toHaveLength(1);
  });

  it("a step with an active job leaves one on the wake queue when its budget ends; a step with none sends nothing (idle cost unchanged)", async () => {
    const idle = memoryApp({ settings: { LEADER_SENTINEL_SECONDS: "2" } });
    expect(await runCoordinatorTick(idle.app, idle.sink)).toBe("completed");
    expect(idle.wakeQueue.calls.send).toBe(0);

    const busy = memoryApp({ settings: { LEADER_SENTINEL_SECONDS: "2", STEP_BUDGET_MS: "2500" } });
    await submitJob(
      busy.app,
      { kind: "group-by", params, items: [{ inline: "region,amount\neu,1" }] },
      { wake: false },
    );
    // Nobody works on the job: the step polls for its whole budget and ends with the job still active.
    expect(await runCoordinatorTick(busy.app, busy.sink)).toBe("completed");
    const bodies = busy.wakeQueue.bodies().map((body) => JSON.parse(body) as Record<string, unknown>);
    // The announcement (this step registered the job) and the sentinel itself, left to surface.
    expect(bodies).toEqual([
      expect.objectContaining({ reason: "leader-sentinel", from: "unit-wake" }),
      expect.objectContaining({ reason: "leader-sentinel", from: "unit-wake" }),
    ]);
    expect(busy.wakeQueue.calls.hide).toBeGreaterThanOrEqual(1);
    // The next step has nothing new to register: it keeps one sentinel and announces nothing.
    await busy.wakeQueue.receive(32, 600);
    const sendsBefore = busy.wakeQueue.calls.send;
    expect(await runCoordinatorTick(busy.app, busy.sink)).toBe("completed");
    expect(busy.wakeQueue.calls.send - sendsBefore).toBe(1);
  });

  it("a step that registers a job announces it at once: another instance receives it and watches the leader before anything happens to it", async () => {
    const leader = memoryApp({ settings: { LEADER_SENTINEL_SECONDS: "2", STEP_BUDGET_MS: "1500" } });
    await submitJob(
      leader.app,
      { kind: "group-by", params, items: [{ inline: "region,amount\neu,1" }] },
      { wake: false },
    );
    const tick = runCoordinatorTick(leader.app, leader.sink);
    while ((await leader.wakeQueue.peek(32)).length === 0) await new Promise((done) => setTimeout(done, 10));
    const [announced] = await leader.wakeQueue.receive(32, 60);
    const other = memoryApp({
      store: leader.store,
      instanceId: "unit-other",
      settings: { LEADER_SENTINEL_SECONDS: "2", LEADER_WATCH_INTERVAL_MS: "1000" },
    });
    try {
      expect(await handleWakeMessage(other.app, other.sink, announced?.text, { dequeueCount: 1 })).toBe("not-acquired");
      expect(other.app.leaderWatch.watching).toBe(true);
      expect(other.wakeQueue.length).toBe(0); // no follow-up
    } finally {
      await other.app.leaderWatch.stop();
    }
    expect(await tick).toBe("completed");
  });

  it("a step whose jobs all ended deletes its sentinel", async () => {
    const world = memoryApp({ settings: { LEADER_SENTINEL_SECONDS: "2", STEP_BUDGET_MS: "3000" } });
    const { id } = (await submitJob(
      world.app,
      { kind: "group-by", params, items: [{ inline: "region,amount\neu,1" }] },
      { wake: false },
    )) as { id: string };
    const tick = runCoordinatorTick(world.app, world.sink);
    // Once the sentinel is out, the job's one unit is worked; the step folds it and ends with no active job.
    while (world.wakeQueue.length === 0) await new Promise((done) => setTimeout(done, 10));
    for (const message of await world.workQueue.receive(32, 60)) {
      await handleWorkMessage(world.app, world.sink, message.text, { id: message.id, dequeueCount: 1 });
      await world.workQueue.delete(message);
    }
    expect(await tick).toBe("completed");
    expect(world.events).toContainEqual(expect.objectContaining({ type: "job-completed", jobId: id }));
    // Left: the announcement and the worker's results-arrived wake-up, both visible; the hidden sentinel is gone.
    const visible = (await world.wakeQueue.peek(32)).map(
      (message) => (JSON.parse(message.text ?? "{}") as { reason: string }).reason,
    );
    expect(visible.sort()).toEqual(["leader-sentinel", "results-arrived"]);
    expect(world.wakeQueue.length).toBe(2);
  });

  it("a results wake-up that finds a holder which does not heartbeat (takeover off there, an older version) still sends a follow-up", async () => {
    vi.useFakeTimers({ now: 2_000_000, toFake: ["Date"] });
    const world = memoryApp({
      store: heldByOther(),
      settings: { ACTIVITY_WAKE_INTERVAL_MS: "5000", LEADER_SENTINEL_SECONDS: "2", LEADER_WATCH_INTERVAL_MS: "1000" },
    });
    try {
      const wake = JSON.stringify({ v: 1, reason: "results-arrived", sentAtMs: Date.now(), from: "worker-x" });
      expect(await handleWakeMessage(world.app, world.sink, wake, { dequeueCount: 1 })).toBe("not-acquired");
      expect(world.wakeQueue.bodies().map((body) => JSON.parse(body) as Record<string, unknown>)).toEqual([
        expect.objectContaining({ reason: "results-arrived", followUp: 1 }),
      ]);
    } finally {
      await world.app.leaderWatch.stop();
    }
  });

  it("with sentinels and the watcher on, a results wake-up that finds the lease held sends no follow-up; a submission's still does", async () => {
    vi.useFakeTimers({ now: 2_000_000, toFake: ["Date"] });
    // A holder that heartbeats (its record names a takeover deadline): this process's watcher can take it over.
    const store = heldByOther();
    store.record = { ...store.record, takeoverDeadlineMs: 2500 };
    const world = memoryApp({
      store,
      settings: { ACTIVITY_WAKE_INTERVAL_MS: "5000", LEADER_SENTINEL_SECONDS: "2", LEADER_WATCH_INTERVAL_MS: "1000" },
    });
    try {
      const wake = (reason: string) => JSON.stringify({ v: 1, reason, sentAtMs: Date.now(), from: "worker-x" });
      expect(await handleWakeMessage(world.app, world.sink, wake("results-arrived"), { dequeueCount: 1 })).toBe(
        "not-acquired",
      );
      expect(await handleWakeMessage(world.app, world.sink, wake("leader-sentinel"), { dequeueCount: 1 })).toBe(
        "not-acquired",
      );
      expect(world.wakeQueue.length).toBe(0);
      // This process now watches the holder (it breaks a silent one and sends a wake-up itself).
      expect(world.app.leaderWatch.watching).toBe(true);
      expect(await handleWakeMessage(world.app, world.sink, wake("job-submitted"), { dequeueCount: 1 })).toBe(
        "not-acquired",
      );
      expect(world.wakeQueue.bodies().map((body) => JSON.parse(body) as Record<string, unknown>)).toEqual([
        expect.objectContaining({ reason: "job-submitted", followUp: 1 }),
      ]);
    } finally {
      await world.app.leaderWatch.stop();
    }
  });
});
