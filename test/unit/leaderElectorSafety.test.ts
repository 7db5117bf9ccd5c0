import { describe, expect, it, vi } from "vitest";
import { ConfigurationError, StaleEpochError, StorageError } from "../../src/library/errors";
import type { LeaderTask } from "../../src/library/leadership/LeaderElector";
import { requestStepDown } from "../../src/library/leadership/leaderInfo";
import type { LeadershipTerm } from "../../src/library/leadership/Term";
import { delay } from "../../src/library/util/delay";
import { fakeElector as elector, untilAborted, useFakeLeaseWorld } from "../support/electorHarness";
import { FakeLeaseStore } from "../support/FakeLeaseStore";
import { Recorder } from "../support/recorder";

/** Issue 14: the holes through which two leaders, no leader, or a dead step-down could happen. */
describe("LeaderElector safety (unit, fake timers)", () => {
  const world = useFakeLeaseWorld();

  /** Makes every acquire take effect in storage but lose its answer (a timeout after the request landed). */
  function loseAcquireAnswers(): void {
    const acquire = world.store.acquire.bind(world.store);
    world.store.acquire = async (leaseId, durationS, options) => {
      await acquire(leaseId, durationS, options);
      throw new StorageError("Timeout", undefined, "Storage did not answer (simulated: the acquire landed).");
    };
  }

  /**
   * Runs one term of another instance to its end, then arranges for `hook` to run once just before the next record
   * write.
   */
  async function afterOneTermBeforeNextRecordWrite(hook: () => Promise<void>): Promise<void> {
    await elector(world.store, new Recorder(), { instanceId: "unit-old" }).tryLead(() => Promise.resolve());
    const writeRecord = world.store.writeRecord.bind(world.store);
    let pending = true;
    world.store.writeRecord = async (leaseId, record, options) => {
      if (pending) {
        pending = false;
        await hook();
      }
      return writeRecord(leaseId, record, options);
    };
  }

  it("a second tryLead on the same elector while its term runs returns 'not-acquired' and starts no second term", async () => {
    const a = elector(world.store, world.recorder);
    const first = a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(1_000);
    const second = await a.tryLead((term) => Promise.resolve(term.epoch));
    expect(second).toEqual({
      outcome: "not-acquired",
      leader: expect.objectContaining({ holder: "unit-a", epoch: 1 }) as unknown,
    });
    expect(world.recorder.ofType("lease-acquired")).toHaveLength(1);
    expect(world.store.record.epoch).toBe(1);
    void first;
  });

  it("a task that returns after its renew deadline passed unseen (the process was frozen) ends aborted, not completed", async () => {
    // SIGSTOP mid-step for longer than the lease: the clock moves on, no timer runs, so no renewal fails and nothing
    // ends the term; when the process wakes, the task's next check (its budget) returns at once (chaos zombie-leader).
    const result = await elector(world.store, world.recorder).tryLead(() => {
      vi.setSystemTime(Date.now() + 20_000);
      return Promise.resolve("the step's report");
    });
    expect(result).toMatchObject({ outcome: "aborted", epoch: 1, reason: "deadline" });
    expect(world.recorder.ofType("lease-lost")).toEqual([expect.objectContaining({ reason: "deadline", epoch: 1 })]);
  });

  it("never has two live terms: not from one elector, and not after the end of one term releases the lease", async () => {
    const live = new Set<LeadershipTerm>();
    let overlaps = 0;
    const holdFor =
      (ms: number): LeaderTask<number> =>
      async (term) => {
        overlaps += [...live].filter((other) => other.isLeader()).length;
        live.add(term);
        try {
          await delay(ms, { abortSignal: term.signal });
          return term.epoch;
        } finally {
          live.delete(term);
        }
      };
    const a = elector(world.store, world.recorder);
    const first = a.tryLead(holdFor(5_000));
    await vi.advanceTimersByTimeAsync(1_000);
    const second = a.tryLead(holdFor(10_000));
    await vi.advanceTimersByTimeAsync(5_000); // the first term has ended and released its lease
    const third = elector(world.store, new Recorder(), { instanceId: "unit-c" }).tryLead(holdFor(1_000));
    await vi.advanceTimersByTimeAsync(12_000);
    await Promise.all([first, second, third]);
    expect(overlaps).toBe(0);
    expect((await second).outcome).toBe("not-acquired");
  });

  it("a term survives lease requests of 2.9 s each for several renew intervals", async () => {
    world.store.latencyMs = 2_900;
    const a = elector(world.store, world.recorder);
    const result = a.tryLead(async (term) => {
      for (let second = 0; second < 30; second++) {
        await delay(1_000, { abortSignal: term.signal });
        term.reportProgress();
      }
      return term.epoch;
    });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(await result).toEqual({ outcome: "completed", epoch: 1, value: 1 });
    expect(world.recorder.ofType("lease-lost")).toEqual([]);
    expect(world.recorder.ofType("lease-renewed").length).toBeGreaterThanOrEqual(8);
  });

  it("releases an acquire that landed although every answer timed out, so another instance leads at once", async () => {
    loseAcquireAnswers();
    const a = elector(world.store, world.recorder);
    await expect(a.tryLead(untilAborted)).rejects.toBeInstanceOf(StorageError);
    expect(world.store.holderLeaseId()).toBeUndefined();
    const b = elector(world.store, new Recorder(), { instanceId: "unit-b" });
    world.store.acquire = FakeLeaseStore.prototype.acquire.bind(world.store);
    expect(await b.tryLead((term) => Promise.resolve(term.epoch))).toEqual({
      outcome: "completed",
      epoch: 1,
      value: 1,
    });
  });

  it("releases an acquire that landed when the caller's signal fired mid-acquire", async () => {
    const acquire = world.store.acquire.bind(world.store);
    world.store.acquire = async (leaseId, durationS, options) => {
      await acquire(leaseId, durationS, {}); // lands, then the answer is slow
      await delay(60_000, options);
      return { acquired: true };
    };
    const controller = new AbortController();
    const attempt = elector(world.store, world.recorder).tryLead(untilAborted, { abortSignal: controller.signal });
    const rejected = expect(attempt).rejects.toThrow("shutting down");
    await vi.advanceTimersByTimeAsync(100);
    controller.abort(new Error("shutting down"));
    await vi.advanceTimersByTimeAsync(0);
    await rejected;
    expect(world.store.holderLeaseId()).toBeUndefined();
  });

  it("a release whose answer was lost but which lands later cannot free a later term's lease (simulator seed 108)", async () => {
    loseAcquireAnswers();
    const release = world.store.release.bind(world.store);
    const lateReleases: (() => Promise<void>)[] = [];
    world.store.release = (leaseId) => {
      lateReleases.push(() => release(leaseId)); // the request is still on its way: it lands after the next term began
      return Promise.reject(
        new StorageError("Timeout", undefined, "Storage did not answer (simulated: the release lands later)."),
      );
    };
    const a = elector(world.store, world.recorder);
    await expect(a.tryLead(untilAborted)).rejects.toBeInstanceOf(StorageError);
    world.store.acquire = FakeLeaseStore.prototype.acquire.bind(world.store);
    world.store.release = release;
    await vi.advanceTimersByTimeAsync(16_000); // the lease of the failed attempt has expired
    void a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(100);
    expect(world.recorder.ofType("lease-acquired")).toMatchObject([{ epoch: 1 }]);
    const held = world.store.holderLeaseId();
    for (const late of lateReleases) await late();
    expect(world.store.holderLeaseId()).toBe(held);
    const b = elector(world.store, new Recorder(), { instanceId: "unit-b" });
    expect(await b.tryLead((term) => Promise.resolve(term.epoch))).toMatchObject({ outcome: "not-acquired" });
  });

  it("leaves a lease whose release failed to expire by itself, and leads after it with a fresh lease id", async () => {
    loseAcquireAnswers();
    const release = world.store.release.bind(world.store);
    world.store.release = () =>
      Promise.reject(new StorageError("StorageUnavailable", undefined, "connect ECONNREFUSED (simulated)"));
    const a = elector(world.store, world.recorder);
    await expect(a.tryLead(untilAborted)).rejects.toBeInstanceOf(StorageError);
    const orphan = world.store.holderLeaseId();
    expect(orphan).toBeDefined();
    world.store.acquire = FakeLeaseStore.prototype.acquire.bind(world.store);
    world.store.release = release;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await a.tryLead((term) => Promise.resolve(term.epoch))).toMatchObject({ outcome: "not-acquired" });
    await vi.advanceTimersByTimeAsync(15_000);
    const next = a.tryLead(() => Promise.resolve(world.store.holderLeaseId()));
    await vi.advanceTimersByTimeAsync(100);
    const result = await next;
    expect(result).toMatchObject({ outcome: "completed", epoch: 1 });
    expect(result.outcome === "completed" ? result.value : orphan).not.toBe(orphan);
  });

  it("a step-down requested between a new holder's acquire and its record write makes the new holder step down", async () => {
    let revoked: number | undefined;
    await afterOneTermBeforeNextRecordWrite(async () => {
      revoked = await requestStepDown(world.store); // the lease is held, the record still names epoch 1
    });
    const result = elector(world.store, world.recorder).tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(revoked).toBe(1);
    expect(world.recorder.ofType("lease-lost")).toMatchObject([{ reason: "revoked", epoch: 2 }]);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "revoked", epoch: 2 });
    expect(world.store.holderLeaseId()).toBeUndefined();
  });

  it("a step-down whose read saw the predecessor but whose write came after the new term's first check still makes it step down", async () => {
    let operatorSaw: number | undefined;
    await afterOneTermBeforeNextRecordWrite(async () => {
      operatorSaw = (await world.store.read()).record.epoch; // the operator's read, before the new record
    });
    const result = elector(world.store, world.recorder).tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(500); // the new term has begun and checked revocation
    expect(operatorSaw).toBe(1);
    await world.store.revoke(1); // the operator's write lands late: its 202 promised that someone steps down
    await vi.advanceTimersByTimeAsync(4_000);
    expect(world.recorder.ofType("lease-lost")).toMatchObject([{ reason: "revoked", epoch: 2 }]);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "revoked", epoch: 2 });
  });

  /**
   * Holds the operator's revocation write until `land()` is called (its read has happened already): a request whose
   * write is slow to land.
   */
  function holdRevocationWrite(): { land: () => Promise<void> } {
    const revoke = world.store.revoke.bind(world.store);
    let release: (() => void) | undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let landed: Promise<void> | undefined;
    world.store.revoke = (epoch, options) => {
      landed = gate.then(() => revoke(epoch, options));
      return landed;
    };
    return {
      land: async () => {
        release?.();
        await landed;
      },
    };
  }

  it("a step-down whose write lands after the revoked term and a whole short term after it have ended still stops the next term (issue 21)", async () => {
    const write = holdRevocationWrite();
    let accepted: Promise<number | undefined> | undefined;
    const a = elector(world.store, world.recorder);
    // Term 1: the operator's request reads the lease while it is held (epoch 1); its write is slow.
    expect(
      await a.tryLead(async () => {
        accepted = requestStepDown(world.store);
        await vi.advanceTimersByTimeAsync(10);
      }),
    ).toMatchObject({ outcome: "completed", epoch: 1 });
    // Term 2: a short idle step (a wake-up) begins, checks, finds nothing, ends.
    const b = elector(world.store, new Recorder(), { instanceId: "unit-b" });
    expect(await b.tryLead(() => Promise.resolve())).toMatchObject({ outcome: "completed", epoch: 2 });
    await write.land(); // only now does the request land; the API answered 202 {revokedEpoch: 1}
    expect(await accepted).toBe(1);
    const result = a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(world.recorder.ofType("lease-lost")).toMatchObject([{ reason: "revoked", epoch: 3 }]);
    expect(await result).toMatchObject({ outcome: "aborted", reason: "revoked", epoch: 3 });
    expect(world.store.revocation).toMatchObject({ epoch: 1, honoured: true });
    // Once honoured, it stops nobody else.
    const next = b.tryLead(async (term) => {
      await delay(7_000, { abortSignal: term.signal });
      return term.epoch;
    });
    await vi.advanceTimersByTimeAsync(8_000);
    expect(await next).toEqual({ outcome: "completed", epoch: 4, value: 4 });
  });

  it("a term marks honoured only the request it read: a second request that lands before the mark stops the next term too (issue 21)", async () => {
    const a = elector(world.store, world.recorder);
    const honour = world.store.honourRevocation.bind(world.store);
    world.store.honourRevocation = async (epoch, options) => {
      // A second operator's request (same epoch, read before term 1 stepped down) lands between the check and the mark.
      await world.store.revoke(1);
      return honour(epoch, options);
    };
    const first = a.tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await requestStepDown(world.store)).toBe(1);
    await vi.advanceTimersByTimeAsync(3_000);
    expect(await first).toMatchObject({ outcome: "aborted", reason: "revoked", epoch: 1 });
    world.store.honourRevocation = honour;
    expect(world.store.revocation).toMatchObject({ epoch: 1, honoured: false });
    const second = elector(world.store, new Recorder(), { instanceId: "unit-b" }).tryLead(untilAborted);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await second).toMatchObject({ outcome: "aborted", reason: "revoked", epoch: 2 });
    expect(world.store.revocation).toMatchObject({ epoch: 1, honoured: true });
  });

  it("a new term's epoch exceeds the epoch floor when the record is behind it (lease blob lost)", async () => {
    const a = elector(world.store, world.recorder, { readEpochFloor: () => Promise.resolve(41) });
    expect(await a.tryLead((term) => Promise.resolve(term.epoch))).toEqual({
      outcome: "completed",
      epoch: 42,
      value: 42,
    });
    expect(world.store.record).toMatchObject({ epoch: 42, holder: "unit-a" });
    const b = elector(world.store, new Recorder(), { instanceId: "unit-b", readEpochFloor: () => Promise.resolve(3) });
    expect(await b.tryLead((term) => Promise.resolve(term.epoch))).toEqual({
      outcome: "completed",
      epoch: 43,
      value: 43,
    });
  });

  it("claims the epoch before the term begins, with the term's own epoch, holder and start (claimEpoch)", async () => {
    const claims: unknown[] = [];
    const a = elector(world.store, world.recorder, {
      readEpochFloor: () => Promise.resolve(4),
      claimEpoch: (claim) => {
        claims.push({
          epoch: claim.epoch,
          instanceId: claim.instanceId,
          startedAtMs: claim.startedAtMs,
          acquiredEvents: world.recorder.ofType("lease-acquired").length,
        });
        return Promise.resolve();
      },
    });
    const result = await a.tryLead((term) => Promise.resolve({ epoch: term.epoch, startedAtMs: term.startedAtMs }));
    expect(result).toMatchObject({ outcome: "completed", epoch: 5 });
    const value = (result as { value: { startedAtMs: number } }).value;
    expect(claims).toEqual([{ epoch: 5, instanceId: "unit-a", startedAtMs: value.startedAtMs, acquiredEvents: 0 }]);
    expect(world.store.record).toMatchObject({ epoch: 5, sinceMs: value.startedAtMs });
  });

  it("a term whose epoch another term claimed first (the lease blob was lost in between) never begins: not-acquired, lease released (simulator seed 20261136)", async () => {
    let ran = false;
    const a = elector(world.store, world.recorder, {
      readEpochFloor: () => Promise.resolve(4),
      claimEpoch: (claim) =>
        Promise.reject(
          new StaleEpochError(claim.epoch, claim.epoch, `epoch ${claim.epoch} is already recorded by another term`),
        ),
    });
    const result = await a.tryLead(() => {
      ran = true;
      return Promise.resolve();
    });
    expect(result).toEqual({ outcome: "not-acquired", leader: undefined });
    expect(ran).toBe(false);
    expect(world.recorder.ofType("lease-acquired")).toHaveLength(0);
    expect(world.store.holderLeaseId()).toBeUndefined();
  });

  it("a claim that fails for another reason (storage) ends the attempt with that error, and releases the lease", async () => {
    const a = elector(world.store, world.recorder, {
      claimEpoch: () => Promise.reject(new StorageError("ServerBusy", 503, "storage is busy")),
    });
    await expect(a.tryLead(untilAborted)).rejects.toThrow(/storage is busy/);
    expect(world.recorder.ofType("lease-acquired")).toHaveLength(0);
    expect(world.store.holderLeaseId()).toBeUndefined();
  });

  it("rejects a floor that is not a whole number >= 0 with a ConfigurationError, and releases the lease", async () => {
    const a = elector(world.store, world.recorder, { readEpochFloor: () => Promise.resolve(Number.NaN) });
    await expect(a.tryLead(untilAborted)).rejects.toThrow(ConfigurationError);
    await expect(a.tryLead(untilAborted)).rejects.toThrow(
      /readEpochFloor returned NaN; it must resolve to a whole number ≥ 0/,
    );
    expect(world.store.holderLeaseId()).toBeUndefined();
    expect(world.store.record.epoch).toBe(0);
  });
});
