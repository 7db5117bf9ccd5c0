import { LeaderElector } from "../../src/library/leadership/LeaderElector";
import { randomUUID } from "node:crypto";
import { BlobServiceClient } from "@azure/storage-blob";
import { describe, expect, it } from "vitest";
import { LeadershipLostError, StorageError } from "../../src/library/errors";
import { BlobLeaseStore } from "../../src/azure/BlobLeaseStore";
import { uniqueName, useAzurite } from "../support/azuriteFixture";

describe("BlobLeaseStore on Azurite (adapter)", () => {
  const env = useAzurite();
  const newStore = (): BlobLeaseStore => new BlobLeaseStore(env.blobService(), { containerName: uniqueName("leases") });

  it.each([
    [{ containerName: "Leases" }, /containerName "Leases" is not a valid Azure container name: use 3–63 lowercase/],
    [{ containerName: "a--b" }, /containerName "a--b"/],
    [{ blobName: "" }, /blobName "" is not a valid lease blob name: use 1–1000 characters/],
    [{ blobName: "lease/" }, /not ending in '.' or '\/'/],
  ])("rejects invalid names %o with an error that says what is allowed", (options, message) => {
    expect(() => new BlobLeaseStore(env.blobService(), options)).toThrow(message);
  });

  it("reads an unleased, never-created lease as available with epoch 0", async () => {
    const store = newStore();
    expect(await store.read()).toEqual({
      state: "available",
      record: { holder: "", epoch: 0, sinceMs: 0, transitions: 0 },
    });
  });

  it("creates container and blob on first acquire; a second holder gets 'not acquired', not an exception", async () => {
    const store = newStore();
    expect(await store.acquire(randomUUID(), 15)).toEqual({ acquired: true });
    expect(await store.acquire(randomUUID(), 15)).toEqual({ acquired: false });
    expect((await store.read()).state).toBe("leased");
  });

  it("acquiring again with the lease id already held succeeds (idempotent retry)", async () => {
    const store = newStore();
    const leaseId = randomUUID();
    expect(await store.acquire(leaseId, 15)).toEqual({ acquired: true });
    expect(await store.acquire(leaseId, 15)).toEqual({ acquired: true });
  });

  it("writes the leader record only with the lease id; others get LeadershipLostError", async () => {
    const store = newStore();
    const leaseId = randomUUID();
    await store.acquire(leaseId, 15);
    const record = { holder: "a", epoch: 7, sinceMs: 1234, transitions: 3 };
    await store.writeRecord(leaseId, record);
    expect((await store.read()).record).toEqual(record);
    await expect(store.writeRecord(randomUUID(), { ...record, epoch: 8 })).rejects.toBeInstanceOf(LeadershipLostError);
    expect((await store.read()).record).toEqual(record);
  });

  it("acquiring while the lease is breaking is 'not acquired', not an error, with its own lease id or another", async () => {
    const store = newStore();
    const leaseId = randomUUID();
    await store.acquire(leaseId, 15);
    await store.breakLease(30);
    expect((await store.read()).state).toBe("breaking");
    // 409 LeaseIsBreakingAndCannotBeAcquired (Azurite answers it for the breaking lease's own id, LeaseAlreadyPresent
    // for others).
    expect(await store.acquire(leaseId, 15)).toEqual({ acquired: false });
    expect(await store.acquire(randomUUID(), 15)).toEqual({ acquired: false });
  });

  it("renewing a broken lease rejects with LeadershipLostError('lost')", async () => {
    const store = newStore();
    const leaseId = randomUUID();
    await store.acquire(leaseId, 15);
    await store.renew(leaseId);
    await store.breakLease(0);
    expect((await store.read()).state).toBe("broken");
    await store.acquire(randomUUID(), 15);
    await expect(store.renew(leaseId)).rejects.toMatchObject({ name: "LeadershipLostError", reason: "lost" });
  });

  it("tells a lapsed term from a released one on Azurite: released, broken, broken and marked by a takeover", async () => {
    const store = newStore();
    const leaseId = randomUUID();
    await store.acquire(leaseId, 15);
    await store.release(leaseId);
    expect((await store.read()).state).toBe("available");
    const elector = new LeaderElector({ store, instanceId: "azurite-a" });
    const ended = async (): Promise<string | undefined> => {
      const result = await elector.tryLead((term) => Promise.resolve(term.previousEnd));
      return result.outcome === "completed" ? result.value : undefined;
    };
    expect(await ended()).toBe("released");
    await store.acquire(randomUUID(), 15);
    await store.breakLease(0);
    expect((await store.read()).state).toBe("broken");
    expect(await ended()).toBe("lapsed");
    expect(await ended()).toBe("released");
    // A takeover: the break, then the mark written to the broken lease's blob — after which Azurite reads the lease as
    // available again. The next term still knows the one before lapsed (the mark says so).
    await store.acquire(randomUUID(), 15);
    const held = await store.read();
    expect(await store.breakIfUnchanged(held.version ?? "", { ...held.record, brokenBy: "azurite-b" })).toBe("broken");
    expect(await ended()).toBe("lapsed");
  });

  it("release frees the lease at once; releasing a lease no longer ours is a no-op", async () => {
    const store = newStore();
    const a = randomUUID();
    await store.acquire(a, 15);
    await store.release(a);
    expect((await store.read()).state).toBe("available");
    const b = randomUUID();
    expect(await store.acquire(b, 15)).toEqual({ acquired: true });
    await store.release(a);
    expect((await store.read()).state).toBe("leased");
  });

  it("records and reads revocation by epoch; marks it honoured only while it still names that epoch", async () => {
    const store = newStore();
    expect(await store.readRevocation()).toBeUndefined();
    await store.breakLease(0); // nobody holds it: a no-op, not an error
    await store.revoke(4);
    expect(await store.readRevocation()).toMatchObject({ epoch: 4, honoured: false });
    await store.honourRevocation(3); // names another epoch: left as it is
    expect(await store.readRevocation()).toMatchObject({ epoch: 4, honoured: false });
    await store.honourRevocation(4);
    expect(await store.readRevocation()).toMatchObject({ epoch: 4, honoured: true });
    await store.revoke(5); // a new request is pending again
    expect(await store.readRevocation()).toMatchObject({ epoch: 5, honoured: false });
  });

  it("gives each request its own id, and marks honoured only the request with the id the term read (issue 21)", async () => {
    const store = newStore();
    await store.revoke(7);
    const first = await store.readRevocation();
    expect(first?.requestId).toMatch(/^[0-9a-f-]{36}$/);
    await store.revoke(7); // a second request for the same epoch lands before the first is marked
    const second = await store.readRevocation();
    expect(second).toMatchObject({ epoch: 7, honoured: false });
    expect(second?.requestId).not.toBe(first?.requestId);
    await store.honourRevocation(7, { requestId: first?.requestId ?? "" }); // the term read the first: no-op
    expect(await store.readRevocation()).toEqual(second);
    await store.honourRevocation(7, { requestId: second?.requestId ?? "" });
    expect(await store.readRevocation()).toEqual({ ...second, honoured: true });
  });

  it("rejects with the caller's reason when already aborted, and mid-call", async () => {
    const store = newStore();
    const reason = new Error("stop now");
    await expect(store.acquire(randomUUID(), 15, { abortSignal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    const controller = new AbortController();
    const pending = store.read({ abortSignal: controller.signal });
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it("reports unreachable storage as StorageError('StorageUnavailable')", async () => {
    const dead = BlobServiceClient.fromConnectionString(
      env.azurite.connectionString.replace(`:${env.azurite.blobPort}/`, ":1/"),
      { retryOptions: { maxTries: 1 } },
    );
    const store = new BlobLeaseStore(dead);
    const error: unknown = await store.read().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ code: "StorageUnavailable" });
  });
});
