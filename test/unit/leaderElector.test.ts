import { describe, expect, it, vi } from "vitest";
import { ConfigurationError, LeadershipLostError, StorageError } from "../../src/library/errors";
import { LeaderElector } from "../../src/library/leadership/LeaderElector";
import { leaseTimingProblems } from "../../src/library/leadership/options";
import { delay } from "../../src/library/util/delay";
import { fakeElector as elector, untilAborted, useFakeLeaseWorld } from "../support/electorHarness";
import { FakeLeaseStore } from "../support/FakeLeaseStore";
import { Recorder } from "../support/recorder";

describe("LeaderElector (unit, fake timers)", () => {
  const world = useFakeLeaseWorld();

  it("holds leadership across several lease durations by renewing", async () => {
    const a = elector(world.store, world.recorder);
    const b = elector(world.store, new Recorder(), { instanceId: "unit-b" });
    let contenderWon = false;
    const result = a.tryLead(async (term) => {
      for (let second = 0; second < 60; second++) {
        await delay(1000, { abortSignal: term.signal });
        term.reportProgress();
        if ((await b.tryLead(() => Promise.resolve("b"))).outcome !== "not-acquired") contenderWon = true;
      }
      return "done";
    });
    await vi.advanceTimersByTimeAsync(61_000);
    expect(await result).toEqual({ outcome: "completed", epoch: 1, value: "done" });
    expect(contenderWon).toBe(false);
    // 60 s over a 15 s lease: renewed every 3 s, so ~20 renewals; never expired in between.
    expect(world.recorder.ofType("lease-renewed").length).toBeGreaterThanOrEqual(19);
    expect(world.recorder.ofType("lease-lost")).toEqual([]);
  });

  it("aborts the task with reason 'lost' within the renew interval when the lease is broken", async () => {
    const a = elector(world.store, world.recorder);
    const result = a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(5_000);
    const brokenAt = Date.now();
    await world.store.breakLease(0);
    await vi.advanceTimersByTimeAsync(3_100);
    const outcome = await result;
    expect(outcome).toMatchObject({ outcome: "aborted", reason: "lost", epoch: 1 });
    const lost = world.recorder.ofType("lease-lost")[0];
    expect(lost?.reason).toBe("lost");
    expect((lost?.atMs ?? Infinity) - brokenAt).toBeLessThanOrEqual(3_000 + 1_000);
    // A lease storage says is not ours is not released.
    expect(world.recorder.ofType("lease-released")).toEqual([]);
  });

  it("stops at the local renew deadline, before the server-side lease expires, when storage hangs", async () => {
    const a = elector(world.store, world.recorder, {
      renewIntervalMs: 3000,
      renewDeadlineMs: 10_000,
      leaseDurationS: 15,
    });
    const result = a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(3_500); // one renewal done at 3 s
    const lastRenewAt = world.recorder.ofType("lease-renewed").at(-1)?.atMs ?? 0;
    world.store.mode = "hang";
    // 10 s to the deadline, then the release (also hanging) times out after the 3 s request timeout.
    await vi.advanceTimersByTimeAsync(15_000);
    const outcome = await result;
    expect(outcome).toMatchObject({ outcome: "aborted", reason: "deadline" });
    const lost = world.recorder.ofType("lease-lost")[0];
    expect(lost?.reason).toBe("deadline");
    // Deadline is 10 s after the last successful renewal was sent; the lease would expire 15 s after it.
    expect(lost?.atMs).toBeLessThanOrEqual(lastRenewAt + 10_000);
    expect(lost?.atMs).toBeLessThan(world.store.expiresAtMs);
  });

  it("stops at the deadline when storage fails fast, retrying renewals until then", async () => {
    const a = elector(world.store, world.recorder);
    const result = a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(3_500);
    world.store.mode = "down";
    await vi.advanceTimersByTimeAsync(11_000);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "deadline" });
    const renewAttemptsWhileDown = world.store.calls.filter((call) => call === "renew").length;
    expect(renewAttemptsWhileDown).toBeGreaterThan(5); // retried every second, not once per interval
    expect(world.recorder.logs.some((log) => log.level === "warn" && log.message.includes("could not renew"))).toBe(
      true,
    );
  });

  it("steps down when revoked, marks it honoured, releases, and another instance takes over with a higher epoch and keeps leading", async () => {
    const a = elector(world.store, world.recorder);
    const result = a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await a.requestStepDown()).toBe(1);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "revoked", epoch: 1 });
    expect(world.recorder.ofType("lease-released")).toHaveLength(1);
    expect(world.store.revocation).toMatchObject({ epoch: 1, honoured: true });
    // The successor runs through several revocation checks: a request its predecessor honoured does not stop it.
    const b = elector(world.store, new Recorder(), { instanceId: "unit-b" });
    const second = b.tryLead(async (term) => {
      await delay(10_000, { abortSignal: term.signal });
      return term.epoch;
    });
    await vi.advanceTimersByTimeAsync(11_000);
    expect(await second).toEqual({ outcome: "completed", epoch: 2, value: 2 });
  });

  it("gives up leadership when the task stops reporting progress (watchdog)", async () => {
    const a = elector(world.store, world.recorder, { stallTimeoutMs: 8_000 });
    const result = a.tryLead(async (term) => {
      for (let i = 0; i < 3; i++) {
        await delay(2_000, { abortSignal: term.signal });
        term.reportProgress();
      }
      await delay(3600_000, { abortSignal: term.signal }); // stuck without progress
    });
    await vi.advanceTimersByTimeAsync(20_000);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "stalled" });
    expect(world.recorder.ofType("lease-released")).toHaveLength(1);
    expect(world.store.holderLeaseId()).toBeUndefined();
  });

  it("ends the term with reason 'shutdown' and releases when the caller aborts mid-term", async () => {
    const a = elector(world.store, world.recorder);
    const controller = new AbortController();
    const result = a.tryLead(untilAborted, { abortSignal: controller.signal });
    await vi.advanceTimersByTimeAsync(4_000);
    controller.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "shutdown" });
    expect(world.store.holderLeaseId()).toBeUndefined();
  });

  it("tryLead rejects at once, touching nothing, when the signal is already aborted", async () => {
    const a = elector(world.store, world.recorder);
    const reason = new Error("already stopped");
    await expect(a.tryLead(untilAborted, { abortSignal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(world.store.calls).toEqual([]);
  });

  it("lead rejects at once when the signal is already aborted", async () => {
    const a = elector(world.store, world.recorder);
    await expect(a.lead(untilAborted, { abortSignal: AbortSignal.abort(new Error("stop")) })).rejects.toThrow("stop");
    expect(world.store.calls).toEqual([]);
  });

  it("lead waits with jittered retries and stops when aborted mid-wait", async () => {
    const holder = elector(world.store, new Recorder(), { instanceId: "unit-holder" });
    void holder.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(10);
    const a = elector(world.store, world.recorder, { random: Math.random });
    const controller = new AbortController();
    const waiting = a.lead(untilAborted, { abortSignal: controller.signal });
    const assertion = expect(waiting).rejects.toThrow("gave up");
    await vi.advanceTimersByTimeAsync(5_000);
    const reads = world.store.calls.filter((call) => call === "read").length;
    controller.abort(new Error("gave up"));
    await assertion;
    expect(reads).toBeGreaterThanOrEqual(4); // polled about once a second
    expect(world.recorder.ofType("leader-observed")[0]).toMatchObject({ leader: "unit-holder", epoch: 1 });
  });

  it("lead becomes leader on its next attempt after the holder releases", async () => {
    const holder = elector(world.store, new Recorder(), { instanceId: "unit-holder" });
    const held = holder.tryLead((term) => delay(2_500, { abortSignal: term.signal }));
    const a = elector(world.store, world.recorder);
    const led = a.lead((term) => Promise.resolve(term.epoch));
    await vi.advanceTimersByTimeAsync(4_000);
    await held;
    expect(await led).toEqual({ outcome: "completed", epoch: 2, value: 2 });
  });

  it("retries an acquire whose outcome was unknown with the same lease id, and leads", async () => {
    const acquire = world.store.acquire.bind(world.store);
    let first = true;
    world.store.acquire = async (leaseId, durationS, options) => {
      const result = await acquire(leaseId, durationS, options);
      if (first) {
        first = false; // the acquire took effect, but the answer was lost
        throw new StorageError("Timeout", undefined, "Storage did not answer (simulated).");
      }
      return result;
    };
    const a = elector(world.store, world.recorder);
    expect(await a.tryLead((term) => Promise.resolve(term.epoch))).toEqual({
      outcome: "completed",
      epoch: 1,
      value: 1,
    });
    expect(world.store.calls.filter((call) => call === "acquire")).toHaveLength(2);
  });

  it("gives every term a strictly higher epoch and counts transitions", async () => {
    const epochs: number[] = [];
    for (const id of ["a", "b", "a", "c"]) {
      const result = await elector(world.store, world.recorder, { instanceId: id }).tryLead((term) =>
        Promise.resolve(term.epoch),
      );
      if (result.outcome === "completed") epochs.push(result.value);
    }
    expect(epochs).toEqual([1, 2, 3, 4]);
    expect(world.store.record).toMatchObject({ holder: "c", epoch: 4, transitions: 4 });
  });

  it("tells a term how the one before it ended: released, or lapsed (expired, broken by an operator)", async () => {
    const ended = async (id: string): Promise<string | undefined> => {
      const result = await elector(world.store, world.recorder, { instanceId: id }).tryLead((term) =>
        Promise.resolve(term.previousEnd),
      );
      return result.outcome === "completed" ? result.value : undefined;
    };
    // Nobody before; then a term that released its lease.
    expect(await ended("a")).toBe("released");
    expect(await ended("b")).toBe("released");
    // A holder that stopped renewing (a crash): its lease expires.
    const crashed = new AbortController();
    const dead = elector(world.store, new Recorder(), { instanceId: "dead", renewIntervalMs: 3000 });
    void dead.tryLead(untilAborted, { abortSignal: crashed.signal }).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(10);
    world.store.mode = "hang"; // its renewals never land, nor does its release
    await vi.advanceTimersByTimeAsync(20_000);
    world.store.mode = "up";
    expect((await world.store.read()).state).toBe("expired");
    expect(await ended("c")).toBe("lapsed");
    expect(world.recorder.ofType("lease-acquired").at(-1)).toMatchObject({
      previousHolder: "dead",
      previousEnd: "lapsed",
    });
    expect(await ended("d")).toBe("released");
    // An operator's break.
    const held = elector(world.store, new Recorder(), { instanceId: "held" }).tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(10);
    await world.store.breakLease(0);
    await vi.advanceTimersByTimeAsync(4_000);
    expect(await held).toMatchObject({ outcome: "aborted", reason: "lost" });
    expect(await ended("e")).toBe("lapsed");
  });

  it("a non-leader returns 'not-acquired' with the leader's identity, and no exception", async () => {
    void elector(world.store, new Recorder(), { instanceId: "leader-x" }).tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(10);
    const result = await elector(world.store, world.recorder).tryLead(() => Promise.resolve("never"));
    expect(result).toMatchObject({ outcome: "not-acquired", leader: { holder: "leader-x", epoch: 1 } });
  });

  it("rethrows the task's own error after releasing the lease", async () => {
    const a = elector(world.store, world.recorder);
    await expect(a.tryLead(() => Promise.reject(new Error("step failed")))).rejects.toThrow("step failed");
    expect(world.store.holderLeaseId()).toBeUndefined();
    expect(world.recorder.ofType("lease-released")).toHaveLength(1);
  });

  it("assertLeader throws once the deadline has passed, even before any timer fires (a frozen process)", async () => {
    const a = elector(world.store, world.recorder);
    let sawLoss: unknown;
    const result = a.tryLead((term) => {
      vi.setSystemTime(Date.now() + 30_000); // the clock jumps as after SIGSTOP/SIGCONT; no timer has run yet
      try {
        term.assertLeader();
      } catch (error) {
        sawLoss = error;
      }
      return Promise.resolve(term.isLeader());
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "deadline" });
    expect(sawLoss).toBeInstanceOf(LeadershipLostError);
  });
});

describe("LeaderElector options", () => {
  const store = new FakeLeaseStore();
  it.each([
    [{ leaseDurationS: 10 }, /leaseDurationS is 10; Azure allows a whole number of seconds from 15 to 60/],
    [{ leaseDurationS: 61 }, /leaseDurationS is 61/],
    [{ renewIntervalMs: 12_000 }, /renewIntervalMs \(12000\) must be below renewDeadlineMs \(10000\)/],
    [
      { renewDeadlineMs: 15_000 },
      /renewDeadlineMs \(15000\) must be at most 13500 ms: the lease duration \(15000 ms\)/,
    ],
    // A1 (docs/explanation/guarantees.md): a holder whose clock runs 10 % slow gives up at 14 s / 0.9 = 15.6 s of real
    // time, after its 15 s lease could have expired and passed on.
    [{ renewDeadlineMs: 14_000 }, /renewDeadlineMs \(14000\) must be at most 13500 ms: the lease duration/],
    [
      { renewDeadlineMs: 14_500, clockDriftRatio: 0.05 },
      /renewDeadlineMs \(14500\) must be at most 14250 ms: the lease duration \(15000 ms\) less 5 %/,
    ],
    [{ jitterRatio: 2 }, /jitterRatio is 2; allowed: 0 to 1/],
    [{ stallTimeoutMs: 100 }, /stallTimeoutMs is 100; it must be above renewIntervalMs/],
    [{ instanceId: "has spaces" }, /instanceId "has spaces" must be 1–128/],
    [{ requestTimeoutMs: 0 }, /requestTimeoutMs is 0/],
  ])("rejects %o with an error naming the option and the allowed range", (bad, message) => {
    expect(() => new LeaderElector({ store, ...bad })).toThrow(ConfigurationError);
    expect(() => new LeaderElector({ store, ...bad })).toThrow(message);
  });

  it.each([
    ["all in order", { renewIntervalMs: 3000, renewDeadlineMs: 10_000, leaseDurationS: 15 }, []],
    ["a deadline at the clock bound", { renewIntervalMs: 3000, renewDeadlineMs: 13_500, leaseDurationS: 15 }, []],
    [
      "an interval not below the deadline",
      { renewIntervalMs: 10_000, renewDeadlineMs: 10_000, leaseDurationS: 15 },
      ["renewIntervalMs (10000) must be below renewDeadlineMs (10000)"],
    ],
    [
      "a deadline not below the lease duration",
      { renewIntervalMs: 3000, renewDeadlineMs: 15_000, leaseDurationS: 15 },
      [
        "renewDeadlineMs (15000) must be at most 13500 ms: the lease duration (15000 ms) less 10 %, so a leader whose clock runs 10 % slow stops before its lease can expire",
      ],
    ],
    [
      "both",
      { renewIntervalMs: 20_000, renewDeadlineMs: 16_000, leaseDurationS: 15 },
      [
        "renewIntervalMs (20000) must be below renewDeadlineMs (16000)",
        "renewDeadlineMs (16000) must be at most 13500 ms: the lease duration (15000 ms) less 10 %, so a leader whose clock runs 10 % slow stops before its lease can expire",
      ],
    ],
  ])(
    "leaseTimingProblems (interval < deadline ≤ 90 % of the duration, the one place of the rule): %s",
    (_name, timings, problems) => {
      expect(leaseTimingProblems(timings)).toEqual(problems);
    },
  );

  it("leaseTimingProblems names the values as the caller asks (the app: its settings)", () => {
    const names = { renewIntervalMs: "INTERVAL", renewDeadlineMs: "DEADLINE", leaseDurationS: "DURATION × 1000" };
    expect(
      leaseTimingProblems({ renewIntervalMs: 20_000, renewDeadlineMs: 16_000, leaseDurationS: 15 }, names),
    ).toEqual([
      "INTERVAL (20000) must be below DEADLINE (16000)",
      "DEADLINE (16000) must be at most 13500 ms: DURATION × 1000 (15000 ms) less 10 %, so a leader whose clock runs 10 % slow stops before its lease can expire",
    ]);
  });

  it("accepts the defaults", () => {
    expect(new LeaderElector({ store }).instanceId).toMatch(/^[\w.-]+-\d+-[0-9a-f]{8}$/);
  });
});
