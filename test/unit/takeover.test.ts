import { describe, expect, it, vi } from "vitest";
import { ConfigurationError, LeadershipLostError, StaleEpochError } from "../../src/library/errors";
import { FencedStateStore } from "../../src/library/fencing/FencedStateStore";
import type { LeaderTask } from "../../src/library/leadership/LeaderElector";
import { LeaderElector } from "../../src/library/leadership/LeaderElector";
import {
  leaseTimingProblems,
  resolveElectorOptions,
  type LeaderElectorOptions,
} from "../../src/library/leadership/options";
import { silenceNeededMs } from "../../src/library/leadership/takeover";
import type { LeadershipTerm } from "../../src/library/leadership/Term";
import { delay } from "../../src/library/util/delay";
import { fakeElector, untilAborted, useFakeLeaseWorld } from "../support/electorHarness";
import { FakeLeaseStore } from "../support/FakeLeaseStore";
import { LeaseStoreView } from "../support/LeaseStoreView";
import { MemoryStateStore } from "../support/MemoryStateStore";
import { Recorder } from "../support/recorder";
import { electorTimings } from "../../src/app/context";
import { readSettings } from "../../src/app/settings";

/**
 * Issue 22: a contender takes over as soon as it KNOWS the holder has stopped by its own takeover deadline — it breaks
 * the lease (conditional on the record version it counted) and acquires it — and never while the holder may still act.
 * Several instances share one fake lease store, each through its own {@link LeaseStoreView} (its own network).
 */

/** The takeover defaults: heartbeat 1 s, deadline 2.5 s, clock rates 10 %, margin 50 ms: a contender waits 3,106 ms. */
const TAKEOVER = { takeover: true } as const;
const WAIT_MS = silenceNeededMs(2500, { clockDriftRatio: 0.1, takeoverMarginMs: 50 });

/**
 * The terms of a test, checked as they go: no term begins while another is live, and no takeover's break lands while
 * the term it ends is live (`isLeader()` reads the holder's own clock at that moment).
 */
class TermWatch {
  readonly violations: string[] = [];
  readonly terms: { id: string; term: LeadershipTerm }[] = [];
  breaks = 0;

  constructor(store: FakeLeaseStore) {
    const breakIfUnchanged = store.breakIfUnchanged.bind(store);
    store.breakIfUnchanged = async (version, record, options) => {
      const outcome = await breakIfUnchanged(version, record, options);
      if (outcome === "broken") {
        this.breaks++;
        for (const { id, term } of this.terms)
          if (term.isLeader()) this.violations.push(`a break landed while ${id} (epoch ${term.epoch}) was live`);
      }
      return outcome;
    };
  }

  /** A task that records its term and holds it until its signal fires. */
  hold(id: string): LeaderTask<never> {
    return (term) => {
      for (const other of this.terms)
        if (other.term.isLeader())
          this.violations.push(
            `${id} began epoch ${term.epoch} while ${other.id} (epoch ${other.term.epoch}) was live`,
          );
      this.terms.push({ id, term });
      return untilAborted(term);
    };
  }
}

/** An elector on its own view of the shared store. */
function on(
  view: LeaseStoreView,
  store: FakeLeaseStore,
  recorder: Recorder,
  options: Partial<LeaderElectorOptions>,
): LeaderElector {
  return fakeElector(store, recorder, { ...options, store: view });
}

describe("takeover below the lease (unit, fake timers)", () => {
  const world = useFakeLeaseWorld();

  it("a break that finds the lease given back since its read (409) is no takeover: no lease-broken, the term after it begins as after a release (issue 37, item 6a)", async () => {
    const viewA = new LeaseStoreView(world.store);
    const a = on(viewA, world.store, world.recorder, { instanceId: "unit-a", ...TAKEOVER });
    const recorderB = new Recorder();
    const b = on(new LeaseStoreView(world.store), world.store, recorderB, { instanceId: "unit-b", ...TAKEOVER });
    const shutdown = new AbortController();
    void a.tryLead((term) => untilAborted(term));
    await vi.advanceTimersByTimeAsync(5_000);
    // unit-a stops heartbeating (its network is cut); its release is the one request that lands, between unit-b's
    // last read (which saw the lease held) and unit-b's break. A release does not change the blob's version.
    viewA.cut = true;
    const heldBy = world.store.leaseId;
    const breakIfUnchanged = world.store.breakIfUnchanged.bind(world.store);
    world.store.breakIfUnchanged = async (version, record, options) => {
      if (heldBy !== undefined) await world.store.release(heldBy);
      return breakIfUnchanged(version, record, options);
    };
    void b.lead((term) => untilAborted(term), { abortSignal: shutdown.signal }).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(recorderB.ofType("lease-broken")).toEqual([]);
    const acquired = recorderB.ofType("lease-acquired");
    expect(acquired).toHaveLength(1);
    expect(acquired[0]).toMatchObject({ epoch: 2, previousHolder: "unit-a", previousEnd: "released" });
    expect(acquired[0]?.brokenBy).toBeUndefined();
    shutdown.abort();
  });

  it("a contender takes over a leader that fell silent long before its lease expires, and only after it stopped", async () => {
    const watch = new TermWatch(world.store);
    const viewA = new LeaseStoreView(world.store);
    const a = on(viewA, world.store, world.recorder, { instanceId: "unit-a", ...TAKEOVER });
    const recorderB = new Recorder();
    const b = on(new LeaseStoreView(world.store), world.store, recorderB, { instanceId: "unit-b", ...TAKEOVER });
    const shutdown = new AbortController();
    void a.tryLead(watch.hold("unit-a"));
    await vi.advanceTimersByTimeAsync(5_000);
    void b.lead(watch.hold("unit-b"), { abortSignal: shutdown.signal }).catch(() => undefined);
    await vi.advanceTimersByTimeAsync(2_000);
    viewA.cut = true; // unit-a's process dies: nothing it sends lands any more
    const leaseExpiresAtMs = world.store.expiresAtMs;
    await vi.advanceTimersByTimeAsync(leaseExpiresAtMs - Date.now() - 1_000);
    const acquired = recorderB.ofType("lease-acquired");
    expect(acquired).toHaveLength(1);
    expect(acquired[0]?.atMs).toBeLessThan(leaseExpiresAtMs);
    expect(acquired[0]).toMatchObject({
      epoch: 2,
      previousHolder: "unit-a",
      brokenBy: "unit-b",
      previousEnd: "lapsed",
    });
    expect(recorderB.ofType("lease-broken")).toMatchObject([{ holder: "unit-a", holderEpoch: 1 }]);
    expect(recorderB.ofType("lease-broken")[0]?.silentMs).toBeGreaterThanOrEqual(WAIT_MS);
    // unit-a stopped by its own rule first: its takeover deadline, not a refusal from storage.
    const lost = world.recorder.ofType("lease-lost");
    expect(lost).toMatchObject([{ reason: "deadline" }]);
    expect(lost[0]?.detail).toContain("takeover deadline");
    expect(lost[0]?.atMs).toBeLessThanOrEqual(recorderB.ofType("lease-broken")[0]?.atMs ?? 0);
    expect(watch.violations).toEqual([]);
    shutdown.abort();
  });

  it("at the app's defaults, never breaks a leader whose heartbeats succeed when every request takes 1 s (0.5 s to land, 0.5 s back)", async () => {
    // The app's elector settings (lease 15 s, renew 3 s / 10 s, heartbeat 1 s, takeover deadline 2.5 s).
    const APP = electorTimings(readSettings({}));
    const watch = new TermWatch(world.store);
    const views = [0, 1, 2].map(() =>
      Object.assign(new LeaseStoreView(world.store), { landAfterMs: 500, answerAfterMs: 500 }),
    );
    const [viewA, viewB, viewC] = views as [LeaseStoreView, LeaseStoreView, LeaseStoreView];
    const a = on(viewA, world.store, world.recorder, { instanceId: "unit-a", ...APP });
    const shutdown = new AbortController();
    const held = a.tryLead(async (term) => {
      await delay(60_000, { abortSignal: term.signal });
      return term.epoch;
    });
    await vi.advanceTimersByTimeAsync(3_000);
    for (const [id, view] of [
      ["unit-b", viewB],
      ["unit-c", viewC],
    ] as const)
      void on(view, world.store, new Recorder(), { instanceId: id, ...APP })
        .lead(watch.hold(id), { abortSignal: shutdown.signal })
        .catch(() => undefined);
    await vi.advanceTimersByTimeAsync(65_000);
    expect(await held).toEqual({ outcome: "completed", epoch: 1, value: 1 });
    expect(world.recorder.ofType("lease-lost")).toEqual([]);
    expect(watch.breaks).toBe(0);
    shutdown.abort();
  });

  it("stops at its takeover deadline when its heartbeats hang, although its renewals still succeed", async () => {
    const view = new LeaseStoreView(world.store);
    const a = on(view, world.store, world.recorder, { instanceId: "unit-a", ...TAKEOVER });
    const result = a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(2_500); // heartbeats at 1 s and 2 s have succeeded
    const hangAt = Date.now();
    Object.assign(view, { only: ["writeRecord"], landAfterMs: 60_000 });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "deadline" });
    const lost = world.recorder.ofType("lease-lost")[0];
    expect(lost?.detail).toContain("takeover deadline (2500 ms)");
    expect((lost?.atMs ?? Infinity) - hangAt).toBeLessThanOrEqual(2_500);
    expect(world.recorder.ofType("lease-renewed").length).toBeGreaterThanOrEqual(1);
  });

  it("a term that ends reports, in lease-lost, the wall-clock moment of its takeover deadline: its last successful heartbeat's start + D", async () => {
    // Issue 37: the chaos checker bounds a frozen leader's step by the leader's own evidence; heartbeats log nothing,
    // so the term names the deadline it counted when it ends.
    const view = new LeaseStoreView(world.store);
    const started: { atMs: number; ok: boolean }[] = [];
    const writeRecord = view.writeRecord.bind(view);
    view.writeRecord = async (...args) => {
      const call = { atMs: Date.now(), ok: false };
      started.push(call);
      await writeRecord(...args);
      call.ok = true;
    };
    const a = on(view, world.store, world.recorder, { instanceId: "unit-a", ...TAKEOVER });
    const result = a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(2_700);
    Object.assign(view, { only: ["writeRecord"], landAfterMs: 60_000 });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "deadline" });
    const lastOk = started.filter((call) => call.ok).at(-1);
    expect(started.filter((call) => call.ok).length).toBeGreaterThanOrEqual(3); // the record write and two heartbeats
    expect(world.recorder.ofType("lease-lost")).toMatchObject([
      { reason: "deadline", takeoverDeadlineAtMs: (lastOk?.atMs ?? NaN) + 2_500 },
    ]);
  });

  it("a term without takeover names no takeover deadline when it ends", async () => {
    const view = new LeaseStoreView(world.store);
    const a = on(view, world.store, world.recorder, { instanceId: "unit-a" });
    const result = a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(1_000);
    view.cut = true;
    await vi.advanceTimersByTimeAsync(12_000);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "deadline" });
    const [lost] = world.recorder.ofType("lease-lost");
    expect(lost).toBeDefined();
    expect(lost).not.toHaveProperty("takeoverDeadlineAtMs");
  });

  it("never breaks a holder that does not heartbeat (takeover off, or an older version): it waits for the expiry", async () => {
    const viewA = new LeaseStoreView(world.store);
    const a = on(viewA, world.store, world.recorder, { instanceId: "unit-a" });
    const recorderB = new Recorder();
    const b = on(new LeaseStoreView(world.store), world.store, recorderB, { instanceId: "unit-b", ...TAKEOVER });
    void a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(4_000);
    const shutdown = new AbortController();
    void b.lead(untilAborted, { abortSignal: shutdown.signal }).catch(() => undefined);
    viewA.cut = true;
    const leaseExpiresAtMs = world.store.expiresAtMs;
    await vi.advanceTimersByTimeAsync(20_000);
    expect(world.store.calls).not.toContain("breakIfUnchanged");
    expect(recorderB.ofType("lease-acquired")[0]?.atMs).toBeGreaterThanOrEqual(leaseExpiresAtMs);
    shutdown.abort();
  });

  it("a holder frozen (SIGSTOP: its clock runs, its code does not) just before its write lands: it finds out on waking, and the write is refused", async () => {
    const state = new MemoryStateStore();
    let holdNextWrite = false;
    const held = Promise.withResolvers<undefined>();
    const sent = Promise.withResolvers<undefined>();
    state.beforeWrite = async () => {
      if (!holdNextWrite) return;
      holdNextWrite = false;
      sent.resolve(undefined);
      await held.promise; // on the wire while the holder is frozen
    };
    let aTerm: LeadershipTerm | undefined;
    let lateWrite: Promise<unknown> | undefined;
    const a = fakeElector(world.store, world.recorder, { instanceId: "unit-a", ...TAKEOVER });
    const aResult = a.tryLead(async (term) => {
      aTerm = term;
      const fenced = new FencedStateStore(state, term);
      const first = await fenced.write("doc", { by: "unit-a" }, undefined);
      holdNextWrite = true;
      lateWrite = fenced.write("doc", { by: "unit-a", late: true }, first).then(
        () => "written",
        (error: unknown) => error,
      ); // assertLeader passed: the write is sent
      return untilAborted(term);
    });
    await vi.advanceTimersByTimeAsync(3_000);
    await sent.promise;
    const b = fakeElector(world.store, new Recorder(), { instanceId: "unit-b", ...TAKEOVER });
    expect((await b.tryLead(untilAborted)).outcome).toBe("not-acquired"); // unit-b starts counting
    vi.setSystemTime(Date.now() + WAIT_MS + 2_000); // unit-a is frozen: the clocks run, no timer of anyone's fires
    let bWrote = false;
    const bResult = b.tryLead(async (term) => {
      const fenced = new FencedStateStore(state, term);
      await fenced.update(
        "doc",
        (value) => value,
        () => ({ by: "unit-b" }),
      );
      bWrote = true;
      return untilAborted(term);
    });
    await vi.waitFor(() => {
      expect(bWrote).toBe(true);
    });
    // unit-a wakes: the first thing it checks refuses, and the write it had on the wire lands after unit-b's.
    expect(aTerm?.isLeader()).toBe(false);
    expect(() => aTerm?.assertLeader()).toThrow(LeadershipLostError);
    held.resolve(undefined);
    expect(await lateWrite).toBeInstanceOf(StaleEpochError);
    expect(await state.read("doc")).toMatchObject({ epoch: 2, value: { by: "unit-b" } });
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await aResult).toMatchObject({ outcome: "aborted", reason: "deadline" });
    void bResult;
  });

  it("two contenders counting the same silence: one takes over, and the other does not break the new term", async () => {
    const watch = new TermWatch(world.store);
    const viewA = new LeaseStoreView(world.store);
    void on(viewA, world.store, world.recorder, { instanceId: "unit-a", ...TAKEOVER }).tryLead(watch.hold("unit-a"));
    await vi.advanceTimersByTimeAsync(2_000);
    const shutdown = new AbortController();
    const recorders = [new Recorder(), new Recorder()];
    for (const [index, id] of ["unit-b", "unit-c"].entries())
      void on(new LeaseStoreView(world.store), world.store, recorders[index] ?? new Recorder(), {
        instanceId: id,
        ...TAKEOVER,
      })
        .lead(watch.hold(id), { abortSignal: shutdown.signal })
        .catch(() => undefined);
    await vi.advanceTimersByTimeAsync(1_000);
    viewA.cut = true;
    await vi.advanceTimersByTimeAsync(30_000);
    const acquired = recorders.flatMap((recorder) => recorder.ofType("lease-acquired"));
    expect(acquired).toHaveLength(1);
    expect(recorders.flatMap((recorder) => recorder.ofType("lease-lost"))).toEqual([]);
    expect(watch.breaks).toBe(1);
    expect(watch.violations).toEqual([]);
    shutdown.abort();
  });

  describe.each([
    [
      "the leader's heartbeats land 1.2 s after they are sent (slow, and it survives them)",
      { A: { only: ["writeRecord"], landAfterMs: 1_200 } },
    ],
    [
      "the leader's heartbeats land at once and their answers come 1.2 s late (it survives them)",
      { A: { only: ["writeRecord"], answerAfterMs: 1_200 } },
    ],
    [
      "the leader's heartbeats take 2 s (it stops itself, and is taken over)",
      { A: { only: ["writeRecord"], landAfterMs: 1_000, answerAfterMs: 1_000 } },
    ],
    ["a contender's reads land 2.5 s after they are sent", { B: { only: ["read"], landAfterMs: 2_500 } }],
    [
      "a contender's reads land at once and their answers come 2.5 s late",
      { B: { only: ["read"], answerAfterMs: 2_500 } },
    ],
    [
      "every request takes 1 s",
      { A: { landAfterMs: 500, answerAfterMs: 500 }, B: { landAfterMs: 500, answerAfterMs: 500 } },
    ],
  ] as const)("when %s", (_name, timings) => {
    it.each([0, 250, 500, 750, 1_100, 1_600, 2_300])(
      "no takeover lands while the leader may act, whenever it is cut off (+%i ms into a second)",
      async (offsetMs) => {
        const watch = new TermWatch(world.store);
        const viewA = Object.assign(new LeaseStoreView(world.store), "A" in timings ? timings.A : {});
        const viewB = Object.assign(new LeaseStoreView(world.store), "B" in timings ? timings.B : {});
        void on(viewA, world.store, world.recorder, { instanceId: "unit-a", ...TAKEOVER }).tryLead(
          watch.hold("unit-a"),
        );
        await vi.advanceTimersByTimeAsync(1_500);
        const shutdown = new AbortController();
        void on(viewB, world.store, new Recorder(), { instanceId: "unit-b", ...TAKEOVER })
          .lead(watch.hold("unit-b"), { abortSignal: shutdown.signal })
          .catch(() => undefined);
        await vi.advanceTimersByTimeAsync(6_000 + offsetMs);
        viewA.cut = true;
        await vi.advanceTimersByTimeAsync(20_000);
        expect(watch.violations).toEqual([]);
        expect(watch.terms.map((entry) => entry.id)).toEqual(["unit-a", "unit-b"]);
        shutdown.abort();
      },
    );
  });

  it("a contender counts from the END of its read: a slow read that returned the last heartbeat does not shorten the wait", async () => {
    const watch = new TermWatch(world.store);
    const viewA = new LeaseStoreView(world.store);
    void on(viewA, world.store, world.recorder, { instanceId: "unit-a", ...TAKEOVER }).tryLead(watch.hold("unit-a"));
    const viewB = new LeaseStoreView(world.store);
    const b = on(viewB, world.store, new Recorder(), { instanceId: "unit-b", ...TAKEOVER });
    await vi.advanceTimersByTimeAsync(2_500); // unit-a heartbeats at 1, 2, 3 and 4 s
    viewB.landAfterMs = 2_000; // sent at 2.5 s, this read lands at 4.5 s: it returns the heartbeat of 4 s
    const slowRead = b.tryLead(watch.hold("unit-b"));
    viewB.landAfterMs = 0;
    await vi.advanceTimersByTimeAsync(1_700);
    viewA.cut = true; // at 4.2 s: the heartbeat of 4 s is unit-a's last; it stops at 6.5 s
    await vi.advanceTimersByTimeAsync(400);
    expect((await slowRead).outcome).toBe("not-acquired");
    await vi.advanceTimersByTimeAsync(1_100); // 5.7 s: 3.2 s after the slow read was sent, 1.2 s after it ended
    void b.tryLead(watch.hold("unit-b"));
    await vi.advanceTimersByTimeAsync(100);
    expect(watch.violations).toEqual([]);
    expect(watch.breaks).toBe(0);
    await vi.advanceTimersByTimeAsync(WAIT_MS);
    void b.tryLead(watch.hold("unit-b"));
    await vi.advanceTimersByTimeAsync(100);
    expect(watch.breaks).toBe(1);
    expect(watch.violations).toEqual([]);
  });

  it("watchLeader counts the silence like tryLead, breaks once the holder has stopped, and never acquires", async () => {
    const viewA = new LeaseStoreView(world.store);
    void on(viewA, world.store, world.recorder, { instanceId: "unit-a", ...TAKEOVER }).tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(2_000);
    const recorderB = new Recorder();
    const b = on(new LeaseStoreView(world.store), world.store, recorderB, { instanceId: "unit-b", ...TAKEOVER });
    const first = await b.watchLeader();
    expect(first).toMatchObject({ outcome: "held", leader: { holder: "unit-a" }, breakInMs: WAIT_MS });
    viewA.cut = true;
    const seen: string[] = [];
    for (let second = 0; second < 8; second++) {
      await vi.advanceTimersByTimeAsync(1_000);
      seen.push((await b.watchLeader()).outcome);
    }
    expect(seen.filter((outcome) => outcome === "broken")).toHaveLength(1);
    expect(seen.at(-1)).toBe("free");
    expect(world.store.holderLeaseId()).toBeUndefined(); // broken, and nobody acquired it
    expect(recorderB.ofType("lease-acquired")).toEqual([]);
    expect(world.store.record).toMatchObject({ holder: "unit-a", brokenBy: "unit-b" });
  });

  it("watchLeader reads nothing while the elector has a term in progress", async () => {
    const a = fakeElector(world.store, world.recorder, { instanceId: "unit-a", ...TAKEOVER });
    void a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(100);
    const reads = world.store.calls.filter((call) => call === "read").length;
    expect(await a.watchLeader()).toEqual({ outcome: "busy" });
    expect(world.store.calls.filter((call) => call === "read").length).toBe(reads);
  });
});

describe("takeover options", () => {
  const store = new FakeLeaseStore();
  it.each([
    [
      { takeover: true, heartbeatIntervalMs: 3000 },
      /heartbeatIntervalMs \(3000\) must be above 0 and below takeoverDeadlineMs \(2500\)/,
    ],
    [
      { takeover: true, takeoverDeadlineMs: 10_000 },
      /takeoverDeadlineMs \(10000\) must be below renewDeadlineMs \(10000\)/,
    ],
    [{ takeover: true, clockDriftRatio: 0.5 }, /clockDriftRatio is 0.5; allowed: 0 to below 0.5/],
    [{ takeover: true, takeoverMarginMs: -1 }, /takeoverMarginMs is -1/],
  ])("rejects %o with an error naming the option and the allowed range", (bad, message) => {
    expect(() => new LeaderElector({ store, ...bad })).toThrow(ConfigurationError);
    expect(() => new LeaderElector({ store, ...bad })).toThrow(message);
  });

  it("checks takeover timings only when takeover is on", () => {
    expect(() => new LeaderElector({ store, heartbeatIntervalMs: 5000 })).not.toThrow();
  });

  it("leaseTimingProblems checks heartbeat interval < takeover deadline < renew deadline, named as the caller asks", () => {
    expect(
      leaseTimingProblems(
        {
          leaseDurationS: 15,
          renewIntervalMs: 3000,
          renewDeadlineMs: 10_000,
          heartbeatIntervalMs: 4000,
          takeoverDeadlineMs: 12_000,
        },
        {
          leaseDurationS: "D",
          renewIntervalMs: "RI",
          renewDeadlineMs: "RD",
          heartbeatIntervalMs: "HI",
          takeoverDeadlineMs: "TD",
        },
      ),
    ).toEqual(["TD (12000) must be below RD (10000)"]);
    expect(
      leaseTimingProblems({
        leaseDurationS: 15,
        renewIntervalMs: 3000,
        renewDeadlineMs: 10_000,
        heartbeatIntervalMs: 2500,
        takeoverDeadlineMs: 2500,
      }),
    ).toEqual(["heartbeatIntervalMs (2500) must be above 0 and below takeoverDeadlineMs (2500)"]);
  });

  it("for every takeover deadline the app's settings allow, the wait covers clocks 10 % fast or slow (the kernel's bound), plus a margin", () => {
    // Issue 37: chrony slews a clock by up to 8.3 % (maxslewrate), the Linux kernel lets a clock's rate be set 10 % off
    // (adjtimex's tick), and CLOCK_MONOTONIC follows both. With the margin fixed at 0.5 s and 2 % assumed, a holder
    // whose clock ran 10 % slow and a contender whose clock ran 10 % fast broke a 9,999 ms deadline about a second
    // early; at the 2,500 ms default the clock rates were covered with 43 ms to spare, not the 0.5 s margin.
    const rateBound = 0.1;
    const cases = [
      { LEASE_HEARTBEAT_INTERVAL_MS: "100", LEASE_TAKEOVER_DEADLINE_MS: "101" },
      {},
      { LEASE_TAKEOVER_DEADLINE_MS: "9999" },
      { LEASE_DURATION_SECONDS: "60", LEASE_RENEW_DEADLINE_MS: "54000", LEASE_TAKEOVER_DEADLINE_MS: "53000" },
    ];
    const short: string[] = [];
    for (const env of cases) {
      const settings = readSettings(env);
      const deadlineMs = settings.LEASE_TAKEOVER_DEADLINE_MS;
      const options = resolveElectorOptions({ store: new FakeLeaseStore(), ...electorTimings(settings) });
      const waitMs = silenceNeededMs(deadlineMs, options);
      expect(options.takeoverMarginMs).toBeGreaterThan(0);
      // The contender's count, on a clock 10 % fast, outlasts the holder's deadline on a clock 10 % slow, in real time,
      // by at least the margin (as the contender's clock counts it; 1 ms for the rounding up).
      const realMarginMs = waitMs / (1 + rateBound) - deadlineMs / (1 - rateBound);
      if (realMarginMs < options.takeoverMarginMs / (1 + rateBound) - 1)
        short.push(
          `deadline ${deadlineMs} ms: the break lands ${Math.round(realMarginMs)} ms after it, not the margin`,
        );
    }
    expect(short).toEqual([]);
    // The ceiling: the deadline below the renew deadline, at most 90 % of the lease (a clock 10 % slow).
    expect(() =>
      readSettings({
        LEASE_DURATION_SECONDS: "60",
        LEASE_RENEW_DEADLINE_MS: "54000",
        LEASE_TAKEOVER_DEADLINE_MS: "53001",
      }),
    ).toThrow(/LEASE_TAKEOVER_DEADLINE_MS="53001" must be from 0 to 53000/);
  });

  it("a contender's wait covers the holder's deadline at the clock bound, plus the margin", () => {
    expect(WAIT_MS).toBe(3106);
    expect(silenceNeededMs(2500, { clockDriftRatio: 0, takeoverMarginMs: 0 })).toBe(2500);
    // At the bound, the contender's count (its clock 10 % fast) outlasts the holder's deadline (its clock 10 % slow).
    const r = 0.1;
    expect(silenceNeededMs(2500, { clockDriftRatio: r, takeoverMarginMs: 0 }) / (1 + r)).toBeGreaterThanOrEqual(
      2500 / (1 - r),
    );
  });
});
