import { describe, expect, it, onTestFinished } from "vitest";
import { StorageError } from "../../src/library/errors";
import { BlobLeaseStore } from "../../src/azure/BlobLeaseStore";
import { LeaderElector, type LeadResult, type LeaderTask } from "../../src/library/leadership/LeaderElector";
import { describeLeader, requestStepDown } from "../../src/library/leadership/leaderInfo";
import type { LeaderElectorOptions } from "../../src/library/leadership/options";
import { delay } from "../../src/library/util/delay";
import { uniqueName, useAzurite } from "../support/azuriteFixture";
import { Recorder } from "../support/recorder";

const untilAborted: LeaderTask<never> = (term) => delay(3600_000, { abortSignal: term.signal }) as Promise<never>;

/**
 * Starts `elector.tryLead` with a task that holds leadership until aborted, and resolves once that task has begun: the
 * lease is held. Tests wait for it instead of a fixed head start, which a fresh Azurite on a loaded machine can take
 * over a second to give (measured: 1.3 s). Rejects, saying why, if the attempt ends without leading.
 */
async function holdLease(
  elector: LeaderElector,
  options: { abortSignal?: AbortSignal } = {},
): Promise<{ running: Promise<LeadResult<never>> }> {
  let begin: () => void = () => undefined;
  const begun = new Promise<void>((resolve) => (begin = resolve));
  const running = elector.tryLead((term) => {
    begin();
    return untilAborted(term);
  }, options);
  const endedFirst = running.then((result) => {
    throw new Error(`the holder never led: ${JSON.stringify(result)}`);
  });
  await Promise.race([begun, endedFirst]);
  return { running };
}

describe("leadership on Azurite", () => {
  const env = useAzurite();
  const newStore = (): BlobLeaseStore => new BlobLeaseStore(env.blobService(), { containerName: uniqueName("leases") });
  const newElector = (
    store: BlobLeaseStore,
    instanceId: string,
    recorder = new Recorder(),
    extra: Partial<LeaderElectorOptions> = {},
  ): LeaderElector =>
    new LeaderElector({
      store,
      instanceId,
      logger: recorder.logger,
      onEvent: recorder.onEvent,
      renewIntervalMs: 1000,
      retryIntervalMs: 250,
      ...extra,
    });

  it("with 8 contenders racing at once, exactly one wins and the rest get 'not-acquired' without an exception", async () => {
    const store = newStore();
    const release = new AbortController();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        newElector(store, `racer-${i}`).tryLead(async (term) => {
          await delay(1500, { abortSignal: release.signal }).catch(() => undefined);
          return term.epoch;
        }),
      ),
    );
    const winners = results.filter((result) => result.outcome === "completed");
    expect(winners).toHaveLength(1);
    expect(winners[0]).toMatchObject({ epoch: 1, value: 1 });
    expect(results.filter((result) => result.outcome === "not-acquired")).toHaveLength(7);
  });

  it("keeps leadership for 22 s (beyond the 15 s lease) by renewing, with the default timings", async () => {
    const store = newStore();
    const recorder = new Recorder();
    const leader = new LeaderElector({
      store,
      instanceId: "long-leader",
      logger: recorder.logger,
      onEvent: recorder.onEvent,
    });
    const rival = newElector(store, "rival");
    let rivalWon = false;
    const result = await leader.tryLead(async (term) => {
      for (let i = 0; i < 11; i++) {
        await delay(2000, { abortSignal: term.signal });
        if ((await rival.tryLead(() => Promise.resolve())).outcome !== "not-acquired") rivalWon = true;
      }
      return term.epoch;
    });
    expect(result).toEqual({ outcome: "completed", epoch: 1, value: 1 });
    expect(rivalWon).toBe(false);
    expect(recorder.ofType("lease-renewed").length).toBeGreaterThanOrEqual(6);
  }, 40_000);

  it("aborts the task with reason 'lost' within renew interval + 1 s when someone breaks the lease", async () => {
    const store = newStore();
    const recorder = new Recorder();
    let abortedAt = 0;
    const running = newElector(store, "victim", recorder).tryLead(async (term) => {
      term.signal.addEventListener("abort", () => (abortedAt = Date.now()));
      return untilAborted(term);
    });
    await delay(1500);
    const brokenAt = Date.now();
    await store.breakLease(0);
    const result = await running;
    expect(result).toMatchObject({ outcome: "aborted", reason: "lost", epoch: 1 });
    expect(abortedAt - brokenAt).toBeLessThanOrEqual(1000 + 1000);
    expect(recorder.ofType("lease-lost")).toMatchObject([{ reason: "lost", epoch: 1, instanceId: "victim" }]);
  });

  it("aborts the task with reason 'lost' at its next renewal when the lease container is deleted", async () => {
    const service = env.blobService();
    const containerName = uniqueName("leases");
    const store = new BlobLeaseStore(service, { containerName });
    const running = newElector(store, "homeless").tryLead(untilAborted);
    await delay(1500);
    const deletedAt = Date.now();
    await service.getContainerClient(containerName).delete();
    const result = await running;
    expect(result).toMatchObject({ outcome: "aborted", reason: "lost", epoch: 1 });
    expect(Date.now() - deletedAt).toBeLessThan(1000 + 1500); // the renew interval, not the 10 s renew deadline
  });

  it("on a graceful end releases, and a waiting contender leads on its very next attempt", async () => {
    const store = newStore();
    const first = newElector(store, "first");
    const second = newElector(store, "second", new Recorder(), { retryIntervalMs: 1000, jitterRatio: 0 });
    let begun: () => void = () => undefined;
    const firstBegun = new Promise<void>((resolve) => (begun = resolve));
    const firstDone = first.tryLead(async (term) => {
      begun();
      await delay(1200, { abortSignal: term.signal });
      return Date.now();
    });
    // The contender starts once the first term has begun (a fixed head start lost the race once under load).
    await firstBegun;
    const secondLed = second.lead((term) => Promise.resolve({ epoch: term.epoch, at: Date.now() }));
    const firstResult = await firstDone;
    const secondResult = await secondLed;
    expect(firstResult.outcome).toBe("completed");
    expect(secondResult).toMatchObject({ outcome: "completed", value: { epoch: 2 } });
    if (firstResult.outcome !== "completed" || secondResult.outcome !== "completed") throw new Error("unreachable");
    // Released, not expired: the next attempt (≤ 1 retry interval later, plus slack for a loaded machine) won, far
    // inside the 15 s the lease would otherwise have run.
    expect(secondResult.value.at - firstResult.value).toBeLessThan(1000 + 4000);
  });

  it("an acquire whose answer was lost is retried with the same lease id and leads (no orphaned lease)", async () => {
    const store = newStore();
    const acquire = store.acquire.bind(store);
    let lostAnswers = 0;
    store.acquire = async (leaseId, durationS, options) => {
      const result = await acquire(leaseId, durationS, options); // the real acquire takes effect on Azurite
      if (lostAnswers++ === 0) throw new StorageError("Timeout", undefined, "simulated: the answer never arrived");
      return result;
    };
    const result = await newElector(store, "unlucky").tryLead((term) => Promise.resolve(term.epoch));
    expect(result).toEqual({ outcome: "completed", epoch: 1, value: 1 });
    expect((await store.read()).state).toBe("available"); // released, not left to expire
  });

  it("an acquire that landed although both answers were lost is released at once: another instance leads without waiting for expiry", async () => {
    const store = newStore();
    const acquire = store.acquire.bind(store);
    store.acquire = async (leaseId, durationS, options) => {
      await acquire(leaseId, durationS, options); // the real acquire takes effect on Azurite
      throw new StorageError("Timeout", undefined, "simulated: the answer never arrived");
    };
    await expect(newElector(store, "unlucky").tryLead(untilAborted)).rejects.toBeInstanceOf(StorageError);
    store.acquire = acquire;
    const startedAt = Date.now();
    const next = await newElector(store, "next").tryLead((term) => Promise.resolve(term.epoch));
    expect(next).toEqual({ outcome: "completed", epoch: 1, value: 1 });
    expect(Date.now() - startedAt).toBeLessThan(2_000); // not the 15 s lease duration
  });

  it("steps down when an operator revokes, and another instance takes over with a higher epoch", async () => {
    const store = newStore();
    const leader = newElector(store, "revokee");
    const { running } = await holdLease(leader);
    const info = await describeLeader(store);
    expect(info).toMatchObject({ holder: "revokee", epoch: 1, transitions: 1, leaseState: "leased" });
    expect(await leader.requestStepDown()).toBe(1);
    expect(await running).toMatchObject({ outcome: "aborted", reason: "revoked" });
    const next = await newElector(store, "successor").tryLead((term) => Promise.resolve(term.epoch));
    expect(next).toEqual({ outcome: "completed", epoch: 2, value: 2 });
    expect(await describeLeader(store)).toMatchObject({
      holder: undefined,
      epoch: 2,
      transitions: 2,
      revokedEpoch: 1,
      revocationHonoured: true,
    });
  });

  it("a step-down requested between a new holder's acquire and its record write makes the new holder step down", async () => {
    const store = newStore();
    await newElector(store, "old").tryLead(() => Promise.resolve());
    const writeRecord = store.writeRecord.bind(store);
    let revoked: number | undefined;
    store.writeRecord = async (leaseId, record, options) => {
      revoked ??= await requestStepDown(store); // the lease is held, the record still names epoch 1
      return writeRecord(leaseId, record, options);
    };
    const result = await newElector(store, "new").tryLead(untilAborted, { abortSignal: AbortSignal.timeout(5_000) });
    expect(revoked).toBe(1);
    expect(result).toMatchObject({ outcome: "aborted", reason: "revoked", epoch: 2 });
    expect((await store.read()).state).toBe("available");
  });

  it("a leader whose lease is breaking loses it, and its next attempt gives 'not-acquired', not an exception", async () => {
    const store = newStore();
    const elector = newElector(store, "holder");
    const { running } = await holdLease(elector);
    await store.breakLease(30);
    expect(await running).toMatchObject({ outcome: "aborted", reason: "lost" });
    expect((await store.read()).state).toBe("breaking");
    expect(await elector.tryLead(() => Promise.resolve())).toMatchObject({ outcome: "not-acquired" });
  });

  it("watchdog: a task that stops reporting progress loses leadership instead of renewing forever", async () => {
    const store = newStore();
    const recorder = new Recorder();
    const result = await newElector(store, "stuck", recorder, { stallTimeoutMs: 2500 }).tryLead(async (term) => {
      term.reportProgress();
      await delay(3600_000, { abortSignal: term.signal });
    });
    expect(result).toMatchObject({ outcome: "aborted", reason: "stalled" });
    expect(recorder.ofType("lease-released")).toHaveLength(1);
    expect((await store.read()).state).toBe("available");
  });

  it("lead() aborted mid-wait rejects with the caller's reason and never leads", async () => {
    const store = newStore();
    const stopHolder = new AbortController();
    onTestFinished(() => {
      stopHolder.abort();
    });
    const { running: holder } = await holdLease(newElector(store, "holder"), { abortSignal: stopHolder.signal });
    const controller = new AbortController();
    let led = false;
    const waiting = newElector(store, "waiter").lead(
      () => {
        led = true;
        return Promise.resolve();
      },
      { abortSignal: controller.signal },
    );
    await delay(800);
    controller.abort(new Error("operator stopped waiting"));
    await expect(waiting).rejects.toThrow("operator stopped waiting");
    expect(led).toBe(false);
    stopHolder.abort();
    expect(await holder).toMatchObject({ outcome: "aborted", reason: "shutdown" });
  });
});
