import { describe, expect, it } from "vitest";
import {
  TERM_HISTORY_LIMIT,
  TERMS_KEY,
  readEpochFloor,
  readTermHistory,
  recordTerm,
} from "../../src/coordination/state/termHistory";
import { StaleEpochError } from "../../src/library/errors";
import { FencedStateStore } from "../../src/library/fencing/FencedStateStore";
import { silentLogger } from "../../src/library/util/logger";
import { MemoryStateStore } from "../support/MemoryStateStore";
import { fakeTerm } from "../support/memoryPorts";

describe("term history (terms.json)", () => {
  it("records each term once, newest last, keeps the last 20, and its stored epoch is the floor", async () => {
    const state = new MemoryStateStore();
    expect(await readEpochFloor(state)).toBe(0);
    for (let epoch = 1; epoch <= 25; epoch++) {
      const term = fakeTerm(epoch);
      await recordTerm(new FencedStateStore(state, term), term, silentLogger);
      await recordTerm(new FencedStateStore(state, term), term, silentLogger); // a second step in the same term
    }
    const stored = await state.read(TERMS_KEY);
    expect(stored?.epoch).toBe(25);
    expect(await readEpochFloor(state)).toBe(25);
    const history = stored?.value as { terms: { epoch: number; holder: string }[] };
    expect(history.terms).toHaveLength(TERM_HISTORY_LIMIT);
    expect(history.terms.map((entry) => entry.epoch)).toEqual(Array.from({ length: 20 }, (_, i) => i + 6));
    expect(history.terms.at(-1)).toMatchObject({ holder: "leader-25", epoch: 25 });
  });

  it("an older term cannot record itself after a newer one: StaleEpochError", async () => {
    const state = new MemoryStateStore();
    const newer = fakeTerm(7);
    await recordTerm(new FencedStateStore(state, newer), newer, silentLogger);
    const older = fakeTerm(6);
    await expect(recordTerm(new FencedStateStore(state, older), older, silentLogger)).rejects.toBeInstanceOf(
      StaleEpochError,
    );
    expect(await readEpochFloor(state)).toBe(7);
  });

  it("a second term with an epoch already recorded by another term cannot record itself: StaleEpochError (simulator seed 1040)", async () => {
    // The lease container was deleted after term A wrote its record (epoch 5) but before its terms.json write landed:
    // term B read no record and the floor 4, so it also has epoch 5. Only the first of the two to record itself may
    // go on; the other must stop before any other write, or two terms write documents with the same epoch.
    const state = new MemoryStateStore();
    const a = { ...fakeTerm(5), instanceId: "a", startedAtMs: 1000 };
    const b = { ...fakeTerm(5), instanceId: "b", startedAtMs: 2000 };
    await recordTerm(new FencedStateStore(state, b), b, silentLogger);
    await expect(recordTerm(new FencedStateStore(state, a), a, silentLogger)).rejects.toBeInstanceOf(StaleEpochError);
    // The term that recorded itself first goes on recording (a later step of the same term).
    await recordTerm(new FencedStateStore(state, b), b, silentLogger);
    expect(await readTermHistory(state)).toEqual([{ holder: "b", epoch: 5, sinceMs: 2000 }]);
  });

  it("starts afresh over a document of another shape instead of blocking every term", async () => {
    const state = new MemoryStateStore();
    await state.write(TERMS_KEY, { something: "else" }, 3, { ifNoneMatch: "*" });
    const warnings: string[] = [];
    const term = fakeTerm(4);
    await recordTerm(new FencedStateStore(state, term), term, {
      ...silentLogger,
      warn: (message) => warnings.push(message),
    });
    expect((await state.read(TERMS_KEY))?.value).toEqual({
      v: 1,
      terms: [{ holder: "leader-4", epoch: 4, sinceMs: 0 }],
    });
    expect(warnings[0]).toMatch(/terms\.json is not a term history/);
  });

  it("readTermHistory returns the recorded terms oldest first, and none when there is no history or it has another shape", async () => {
    const state = new MemoryStateStore();
    expect(await readTermHistory(state)).toEqual([]);
    for (const epoch of [1, 2]) {
      const term = { ...fakeTerm(epoch), startedAtMs: epoch * 1000 };
      await recordTerm(new FencedStateStore(state, term), term, silentLogger);
    }
    expect(await readTermHistory(state)).toEqual([
      { holder: "leader-1", epoch: 1, sinceMs: 1000 },
      { holder: "leader-2", epoch: 2, sinceMs: 2000 },
    ]);
    const other = new MemoryStateStore();
    await other.write(TERMS_KEY, { something: "else" }, 3, { ifNoneMatch: "*" });
    expect(await readTermHistory(other)).toEqual([]);
  });
});
