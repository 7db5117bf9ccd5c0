import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BlobLeaseStore } from "../../src/azure/BlobLeaseStore";
import { LeadershipLostError } from "../../src/library/errors";
import { LeaderElector } from "../../src/library/leadership/LeaderElector";
import { uniqueName, useAzurite } from "../support/azuriteFixture";
import { LeaseStoreView } from "../support/LeaseStoreView";
import { Recorder } from "../support/recorder";
import { delay } from "../../src/library/util/delay";

/**
 * Issue 22 on a real Azurite: what takeover needs of Blob Storage — a record version that every metadata write moves on
 * and a renewal does not, and a break conditional on it (If-Match) — and a takeover end to end.
 */
describe("takeover on Azurite (BlobLeaseStore)", () => {
  const env = useAzurite();
  const newStore = (): BlobLeaseStore => new BlobLeaseStore(env.blobService(), { containerName: uniqueName("leases") });
  const record = { holder: "a", epoch: 3, sinceMs: 1234, transitions: 3, takeoverDeadlineMs: 2500 };

  it("every record write moves the version (the blob's ETag) on; acquiring and renewing do not", async () => {
    const store = newStore();
    const leaseId = randomUUID();
    await store.acquire(leaseId, 15);
    const acquired = (await store.read()).version;
    await store.renew(leaseId);
    expect((await store.read()).version).toBe(acquired);
    await store.writeRecord(leaseId, record);
    const first = (await store.read()).version;
    await store.writeRecord(leaseId, record); // a heartbeat: the same record again
    const second = (await store.read()).version;
    expect(new Set([acquired, first, second]).size).toBe(3);
    expect((await store.read()).record).toEqual(record);
  });

  it("breakIfUnchanged breaks only while the version is unchanged; the old holder is then refused, and the mark moves the version on", async () => {
    const store = newStore();
    const leaseId = randomUUID();
    await store.acquire(leaseId, 15);
    await store.writeRecord(leaseId, record);
    const stale = (await store.read()).version ?? "";
    await store.writeRecord(leaseId, record); // a heartbeat lands after the contender's read
    expect(await store.breakIfUnchanged(stale, { ...record, brokenBy: "b" })).toBe("changed");
    expect((await store.read()).state).toBe("leased");
    const current = (await store.read()).version ?? "";
    expect(await store.breakIfUnchanged(current, { ...record, brokenBy: "b" })).toBe("broken");
    const after = await store.read();
    expect(after.state).not.toBe("leased");
    expect(after.record).toEqual({ ...record, brokenBy: "b" });
    expect(after.version).not.toBe(current);
    await expect(store.renew(leaseId)).rejects.toBeInstanceOf(LeadershipLostError);
    await expect(store.writeRecord(leaseId, record)).rejects.toBeInstanceOf(LeadershipLostError);
    // A second contender that counted the same version does not break the next holder before its record is written.
    expect(await store.acquire(randomUUID(), 15)).toEqual({ acquired: true });
    expect(await store.breakIfUnchanged(current, { ...record, brokenBy: "c" })).toBe("changed");
    expect((await store.read()).state).toBe("leased");
  });

  it("breakIfUnchanged on a lease given back since the read is 'not-held' (409, the version unchanged by the release): nothing is marked, the lease is free to acquire (issue 37, item 6a)", async () => {
    const store = newStore();
    const leaseId = randomUUID();
    await store.acquire(leaseId, 15);
    await store.writeRecord(leaseId, record);
    await store.release(leaseId);
    const { version } = await store.read();
    expect(await store.breakIfUnchanged(version ?? "", { ...record, brokenBy: "b" })).toBe("not-held");
    expect((await store.read()).record.brokenBy).toBeUndefined();
    expect(await store.acquire(randomUUID(), 15)).toEqual({ acquired: true });
  });

  it("a record without a takeover deadline reads without one (a holder that does not heartbeat)", async () => {
    const store = newStore();
    const leaseId = randomUUID();
    await store.acquire(leaseId, 15);
    const plain = { holder: "a", epoch: 1, sinceMs: 1, transitions: 1 };
    await store.writeRecord(leaseId, plain);
    expect((await store.read()).record).toEqual(plain);
  });

  it("a contender takes over a leader that fell silent, by breaking its lease after the leader stopped itself", async () => {
    const store = newStore();
    const viewA = new LeaseStoreView(store);
    const recorderA = new Recorder();
    const recorderB = new Recorder();
    const a = new LeaderElector({ store: viewA, instanceId: "it-a", takeover: true, onEvent: recorderA.onEvent });
    const b = new LeaderElector({ store, instanceId: "it-b", takeover: true, onEvent: recorderB.onEvent });
    const aLed = Promise.withResolvers<undefined>();
    const aResult = a.tryLead(async (term) => {
      aLed.resolve(undefined);
      await delay(60_000, { abortSignal: term.signal });
    });
    await aLed.promise;
    const shutdown = new AbortController();
    const bResult = b.lead(
      (term) => {
        shutdown.abort();
        return Promise.resolve(term.epoch);
      },
      { abortSignal: shutdown.signal },
    );
    await delay(1_500);
    viewA.cut = true; // it-a's process loses storage: nothing it sends arrives
    expect(await bResult).toMatchObject({ epoch: 2 });
    expect(await aResult).toMatchObject({ outcome: "aborted", reason: "deadline" });
    const [lost] = recorderA.ofType("lease-lost");
    const [broken] = recorderB.ofType("lease-broken");
    expect(lost?.detail).toContain("takeover deadline");
    expect(broken).toMatchObject({ holder: "it-a", holderEpoch: 1 });
    expect(lost?.atMs).toBeLessThanOrEqual(broken?.atMs ?? 0);
    expect(recorderB.ofType("lease-acquired")).toMatchObject([{ epoch: 2, previousHolder: "it-a", brokenBy: "it-b" }]);
  }, 30_000);
});
