import { describe, expect, it } from "vitest";
import { ConcurrentUpdateError, LeadershipLostError, StaleEpochError } from "../../src/library/errors";
import { FencedStateStore, type Fence } from "../../src/library/fencing/FencedStateStore";
import { MemoryStateStore } from "../support/MemoryStateStore";

const live = (epoch: number): Fence => ({ epoch, assertLeader: () => undefined });
const asNumber = (value: unknown): number => {
  if (typeof value !== "number") throw new Error("not a number");
  return value;
};

describe("FencedStateStore (unit)", () => {
  it("writes carry the writer's epoch and are conditional on the version read", async () => {
    const store = new MemoryStateStore();
    const fenced = new FencedStateStore(store, live(3));
    const created = await fenced.write("k", 1, undefined);
    expect(created).toMatchObject({ value: 1, epoch: 3 });
    await expect(fenced.write("k", 2, undefined)).rejects.toBeInstanceOf(ConcurrentUpdateError);
    await fenced.write("k", 2, created);
    await expect(fenced.write("k", 3, created)).rejects.toBeInstanceOf(ConcurrentUpdateError);
    expect(await fenced.read("k", asNumber)).toMatchObject({ value: 2, epoch: 3 });
  });

  it("refuses a write over a version written by a newer epoch, and tells it from an ordinary race", async () => {
    const store = new MemoryStateStore();
    const old = new FencedStateStore(store, live(1));
    const seen = await old.write("k", 1, undefined);
    const newer = new FencedStateStore(store, live(2));
    await newer.update("k", asNumber, (n) => (n ?? 0) + 10);
    const error = await old.write("k", 99, seen).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StaleEpochError);
    expect(error).toMatchObject({ writerEpoch: 1, storedEpoch: 2 });
    const reread = await old.read("k", asNumber);
    await expect(old.write("k", 99, reread)).rejects.toBeInstanceOf(StaleEpochError);
    expect(await newer.read("k", asNumber)).toMatchObject({ value: 11, epoch: 2 });
  });

  it("refuses every write, without touching storage, once the writer's term is over", async () => {
    const store = new MemoryStateStore();
    const over: Fence = {
      epoch: 4,
      assertLeader: () => {
        throw new LeadershipLostError("deadline", 4, "frozen past the deadline");
      },
    };
    await expect(new FencedStateStore(store, over).write("k", 1, undefined)).rejects.toMatchObject({
      name: "StaleEpochError",
      writerEpoch: 4,
    });
    expect(store.writes).toBe(0);
  });

  it("update re-reads and retries when another writer got in first, and gives up after maxAttempts", async () => {
    /** Before each of the first `races` writes, another writer of the same epoch adds 100. */
    class RacyStore extends MemoryStateStore {
      races = 2;
      override async write(...args: Parameters<MemoryStateStore["write"]>): Promise<{ etag: string }> {
        const [key, , epoch] = args;
        if (this.races-- > 0) {
          const doc = await super.read(key);
          if (doc) await super.write(key, asNumber(doc.value) + 100, epoch, { ifMatch: doc.etag });
        }
        return super.write(...args);
      }
    }
    const store = new RacyStore();
    store.races = 0;
    const fenced = new FencedStateStore(store, live(1));
    await fenced.write("k", 0, undefined);
    store.races = 2;
    let calls = 0;
    const increment = (n: number | undefined): number => {
      calls++;
      return (n ?? 0) + 1;
    };
    expect(await fenced.update("k", asNumber, increment)).toMatchObject({ value: 201 });
    expect(calls).toBe(3);
    store.races = 5;
    await expect(fenced.update("k", asNumber, increment, { maxAttempts: 2 })).rejects.toBeInstanceOf(
      ConcurrentUpdateError,
    );
  });
});
