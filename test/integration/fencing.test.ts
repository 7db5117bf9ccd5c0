import { describe, expect, it } from "vitest";
import {
  ConcurrentUpdateError,
  ConfigurationError,
  LeadershipLostError,
  StaleEpochError,
  StorageError,
} from "../../src/library/errors";
import { MAX_SUMMARY_BYTES } from "../../src/library/fencing/StateStore";
import { BlobStateStore } from "../../src/azure/BlobStateStore";
import { FencedStateStore } from "../../src/library/fencing/FencedStateStore";
import { BlobLeaseStore } from "../../src/azure/BlobLeaseStore";
import { LeaderElector } from "../../src/library/leadership/LeaderElector";
import type { LeadershipTerm } from "../../src/library/leadership/Term";
import { uniqueName, useAzurite } from "../support/azuriteFixture";

interface Counter {
  count: number;
  by: string;
}
const parseCounter = (value: unknown): Counter => {
  if (
    typeof value === "object" &&
    value !== null &&
    "count" in value &&
    "by" in value &&
    typeof value.count === "number" &&
    typeof value.by === "string"
  ) {
    return { count: value.count, by: value.by };
  }
  throw new Error(`not a counter: ${JSON.stringify(value)}`);
};

describe("BlobStateStore on Azurite (adapter)", () => {
  const env = useAzurite();

  it("creates only when absent, writes only over the version read, and returns undefined for a missing key", async () => {
    const store = new BlobStateStore(env.blobService(), uniqueName("state"));
    expect(await store.read("job/1")).toBeUndefined();
    const { etag } = await store.write("job/1", { n: 1 }, 3, { ifNoneMatch: "*" });
    await expect(store.write("job/1", { n: 9 }, 3, { ifNoneMatch: "*" })).rejects.toBeInstanceOf(ConcurrentUpdateError);
    const { etag: etag2 } = await store.write("job/1", { n: 2 }, 4, { ifMatch: etag });
    await expect(store.write("job/1", { n: 9 }, 4, { ifMatch: etag })).rejects.toBeInstanceOf(ConcurrentUpdateError);
    expect(await store.read("job/1")).toEqual({ value: { n: 2 }, etag: etag2, epoch: 4 });
  });

  it("keeps a summary beside a document, written in the same upload and read without the document (issue 21)", async () => {
    const store = new BlobStateStore(env.blobService(), uniqueName("state"));
    expect(await store.readSummary("jobs/a.json")).toBeUndefined();
    const summary = JSON.stringify({ status: "failed", reason: 'clé € 🚀 "quoted"\nnext line' });
    const document = { big: "x".repeat(100_000) };
    const { etag } = await store.write("jobs/a.json", document, 5, { ifNoneMatch: "*" }, { summary });
    expect(await store.readSummary("jobs/a.json")).toEqual({
      summary,
      etag,
      epoch: 5,
      bytes: Buffer.byteLength(JSON.stringify(document)),
    });
    // A write without one (an earlier version's) leaves none: never the previous version's.
    const { etag: etag2 } = await store.write("jobs/a.json", { small: 1 }, 6, { ifMatch: etag });
    expect(await store.readSummary("jobs/a.json")).toEqual({ summary: undefined, etag: etag2, epoch: 6, bytes: 11 });
    // The largest summary allowed fits the blob's metadata; a larger one is refused before anything is sent.
    const largest = "€".repeat(MAX_SUMMARY_BYTES / 3) + "x".repeat(MAX_SUMMARY_BYTES % 3);
    await store.write("jobs/a.json", { n: 3 }, 6, { ifMatch: etag2 }, { summary: largest });
    expect((await store.readSummary("jobs/a.json"))?.summary).toBe(largest);
    await expect(
      store.write("jobs/b.json", { n: 1 }, 6, { ifNoneMatch: "*" }, { summary: `${largest}x` }),
    ).rejects.toBeInstanceOf(ConfigurationError);
    expect(await store.readSummary("jobs/b.json")).toBeUndefined();
  });

  it("deletes a document only while it is the version read; one already gone is a no-op (issue 21)", async () => {
    const store = new BlobStateStore(env.blobService(), uniqueName("state"));
    const { etag } = await store.write("jobs/a.json", { n: 1 }, 2, { ifNoneMatch: "*" });
    const { etag: newer } = await store.write("jobs/a.json", { n: 2 }, 2, { ifMatch: etag });
    await expect(store.delete("jobs/a.json", { ifMatch: etag })).rejects.toBeInstanceOf(ConcurrentUpdateError);
    expect((await store.read("jobs/a.json"))?.value).toEqual({ n: 2 });
    await store.delete("jobs/a.json", { ifMatch: newer });
    expect(await store.read("jobs/a.json")).toBeUndefined();
    await store.delete("jobs/a.json", { ifMatch: newer }); // gone: nothing to do
    await new BlobStateStore(env.blobService(), uniqueName("missing")).delete("x", { ifMatch: newer }); // no container
  });

  it("reports a blob that is not JSON as CorruptState instead of guessing", async () => {
    const service = env.blobService();
    const container = uniqueName("state");
    const store = new BlobStateStore(service, container);
    await store.write("x", 1, 1, { ifNoneMatch: "*" });
    await service.getContainerClient(container).getBlockBlobClient("x").upload("{not json", 9);
    await expect(store.read("x")).rejects.toMatchObject({ name: "StorageError", code: "CorruptState" });
    await expect(store.read("x")).rejects.toBeInstanceOf(StorageError);
  });
});

describe("fencing a stale leader on Azurite", () => {
  const env = useAzurite();

  it("a leader whose lease was broken and taken cannot write: StaleEpochError, state unchanged", async () => {
    const service = env.blobService();
    const leases = new BlobLeaseStore(service, { containerName: uniqueName("leases") });
    const stateStore = new BlobStateStore(service, uniqueName("state"));
    // The stale leader renews rarely, so it has not noticed the loss when it writes.
    const stale = new LeaderElector({
      store: leases,
      instanceId: "stale",
      renewIntervalMs: 8000,
      renewDeadlineMs: 9000,
    });
    const fresh = new LeaderElector({ store: leases, instanceId: "fresh" });

    let staleTerm: LeadershipTerm | undefined;
    let openGate = (): void => undefined;
    const gate = new Promise<void>((resolve) => (openGate = resolve));
    let wroteFirst = (): void => undefined;
    const firstWrite = new Promise<void>((resolve) => (wroteFirst = resolve));
    const staleRun = stale.tryLead(async (term) => {
      staleTerm = term;
      const state = new FencedStateStore(stateStore, term);
      await state.write("counter", { count: 1, by: "stale" }, undefined);
      wroteFirst();
      await gate;
      // Wakes up: still believes it leads (no renewal since), reads and writes.
      const current = await state.read("counter", parseCounter);
      return state.write("counter", { count: (current?.value.count ?? 0) + 100, by: "stale" }, current);
    });
    await firstWrite; // its term has begun (a fixed wait raced the term's setup on a loaded machine)
    await leases.breakLease(0);
    const freshResult = await fresh.tryLead(async (term) => {
      const state = new FencedStateStore(stateStore, term);
      return state.update("counter", parseCounter, (current) => ({ count: (current?.count ?? 0) + 10, by: "fresh" }));
    });
    expect(freshResult).toMatchObject({ outcome: "completed", epoch: 2 });
    expect(staleTerm?.isLeader()).toBe(true); // it really has not noticed yet
    openGate();
    const staleResult = await staleRun.catch((error: unknown) => error);
    expect(staleResult).toBeInstanceOf(StaleEpochError);
    expect(staleResult).toMatchObject({ writerEpoch: 1, storedEpoch: 2 });
    expect(await stateStore.read("counter")).toMatchObject({ value: { count: 11, by: "fresh" }, epoch: 2 });
  });

  it("a writer whose term is over is refused before any request, even for state no newer leader has touched", async () => {
    const stateStore = new BlobStateStore(env.blobService(), uniqueName("state"));
    const frozen = {
      epoch: 5,
      assertLeader: (): void => {
        throw new LeadershipLostError("deadline", 5, "deadline passed while frozen");
      },
    };
    const state = new FencedStateStore(stateStore, frozen);
    await expect(state.write("untouched", { count: 1, by: "zombie" }, undefined)).rejects.toMatchObject({
      name: "StaleEpochError",
      writerEpoch: 5,
    });
    expect(await stateStore.read("untouched")).toBeUndefined();
  });
});
