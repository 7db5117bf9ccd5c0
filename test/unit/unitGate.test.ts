import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { GrantExpiredError, UnitGate } from "../../src/coordination/flow/unitGate";
import type { WorkGrant } from "../../src/coordination/ports/messages";
import { countedWindowMs } from "../../src/coordination/state/grantLedger";

afterEach(() => {
  vi.useRealTimers();
});

/** A grant of `pools`, the first `every` of them for every item, the rest per key in `keys` runs. */
function grant(pools: WorkGrant["pools"], every: number[], keys?: [number, number][]): WorkGrant {
  return { id: "grant-0001", expiresAtMs: 10_000_000, pools, every, ...(keys === undefined ? {} : { keys }) };
}

/**
 * Runs `items` items through the gate on `runners` runners, each item taking its duration; records starts and ends. An
 * item may start `preempted` ms after its take (the process descheduled between the take and the kind's call).
 */
async function runThrough(
  gate: UnitGate,
  durations: readonly number[],
  runners: number,
  preempted: readonly number[] = [],
) {
  const runs: { offset: number; start: number; end: number }[] = [];
  let next = 0;
  const runner = async () => {
    while (next < durations.length) {
      const offset = next++;
      const shares = await gate.acquire(offset, new AbortController().signal);
      vi.setSystemTime(Date.now() + (preempted[offset] ?? 0));
      const start = Date.now();
      shares.started();
      await new Promise((resolve) => setTimeout(resolve, durations[offset]));
      runs.push({ offset, start, end: Date.now() });
      shares.release();
    }
  };
  const all = Promise.all(Array.from({ length: runners }, runner));
  await vi.runAllTimersAsync();
  await all;
  return runs;
}

describe("the worker's gate: a granted unit's items under its shares (issue 42)", () => {
  it("never runs more of a pool's items at once than its share, nor starts more than its rate share in any window", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          c: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
          r: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
          w: fc.integer({ min: 10, max: 200 }),
          keyC: fc.integer({ min: 1, max: 3 }),
          runners: fc.integer({ min: 1, max: 6 }),
          durations: fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 1, maxLength: 30 }),
          keyOf: fc.array(fc.integer({ min: 0, max: 1 }), { minLength: 30, maxLength: 30 }),
          preempted: fc.array(fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 })), {
            minLength: 30,
            maxLength: 30,
          }),
        }),
        async ({ c, r, w, keyC, runners, durations, keyOf, preempted }) => {
          vi.useFakeTimers({ now: 0 });
          const kindPool = { id: "k:x", ...(c === undefined ? {} : { c }), ...(r === undefined ? {} : { r, w }) };
          const keyPools = [
            { id: "k:x/a", c: keyC },
            { id: "k:x/b", c: keyC },
          ];
          const runsOfKeys: [number, number][] = durations.map((_, item) => [1 + (keyOf[item] ?? 0), 1]);
          const gate = new UnitGate(grant([kindPool, ...keyPools], [0], runsOfKeys), durations.length, {
            monotonicMs: () => Date.now(),
            nowMs: () => Date.now(),
          });
          const runs = await runThrough(gate, durations, runners, preempted);
          expect(runs).toHaveLength(durations.length);
          const at = (pool: number | undefined) => (run: { offset: number }) =>
            pool === undefined || 1 + (keyOf[run.offset] ?? 0) === pool;
          for (const [pool, share] of [
            [undefined, c],
            [1, keyC],
            [2, keyC],
          ] as const) {
            if (share === undefined) continue;
            const mine = runs.filter(at(pool));
            for (const run of mine)
              expect(
                mine.filter((other) => other.start <= run.start && other.end > run.start).length,
              ).toBeLessThanOrEqual(share);
          }
          if (r !== undefined)
            for (const run of runs)
              expect(
                runs.filter((other) => other.start >= run.start && other.start < run.start + w).length,
              ).toBeLessThanOrEqual(r);
          vi.useRealTimers();
        },
      ),
      { numRuns: 60 },
    );
  });

  it("an expired grant starts nothing: taking throws GrantExpiredError", () => {
    const gate = new UnitGate({ ...grant([{ id: "k:x", c: 1 }], [0]), expiresAtMs: 100 }, 1, {
      monotonicMs: () => 0,
      nowMs: () => 100,
    });
    expect(() => gate.tryTake(0)).toThrow(GrantExpiredError);
  });

  it("counts a start when the kind was called, not when its shares were taken (a process descheduled in between)", () => {
    let now = 0;
    const gate = new UnitGate(grant([{ id: "k:x", r: 1, w: 100 }], [0]), 2, {
      monotonicMs: () => now,
      nowMs: () => 0,
    });
    const first = gate.tryTake(0);
    now = 50; // descheduled for 50 ms between the take and the call
    first?.started();
    now = countedWindowMs(100); // a window after the take, but not after the start
    expect(gate.tryTake(1)).toBeUndefined();
    now = 50 + countedWindowMs(100);
    expect(gate.tryTake(1)).toBeDefined();
  });

  it("reports its starts and how long ago the last one was, for the leader's hold of the rate permits", () => {
    let now = 1000;
    const gate = new UnitGate(grant([{ id: "k:x", r: 2, w: 100 }], [0]), 3, {
      monotonicMs: () => now,
      nowMs: () => 0,
    });
    expect(gate.lastStartAgoMs()).toBeUndefined();
    gate.tryTake(0)?.started();
    now += 7;
    gate.tryTake(1)?.started();
    expect(gate.tryTake(2)).toBeUndefined(); // both permits used within the window
    now += 30;
    expect(gate.startCount).toBe(2);
    expect(gate.lastStartAgoMs()).toBe(30);
    expect(gate.longestWindowMs).toBe(countedWindowMs(100));
  });
});
