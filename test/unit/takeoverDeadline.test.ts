import { describe, expect, it, vi } from "vitest";
import type { LeadershipTerm } from "../../src/library/leadership/Term";
import { fakeElector, untilAborted, useFakeLeaseWorld } from "../support/electorHarness";
import { LeaseStoreView } from "../support/LeaseStoreView";

/**
 * Issue 37.8 (simulator, CI seed 20261408 with `slowItems`): a holder's term must stop — its signal firing, which is
 * all a task that never calls `isLeader()` hears — at its takeover deadline itself. A contender may break `D` of real
 * time (plus a 50 ms margin) after it read the holder's last heartbeat; a signal that fires later lets the holder's
 * step act after the break.
 */
describe("the takeover deadline ends the term's signal on time (unit, fake timers)", () => {
  const world = useFakeLeaseWorld();

  it("fires the task's signal at the takeover deadline when every heartbeat after the record's write hangs", async () => {
    const view = new LeaseStoreView(world.store);
    const elector = fakeElector(world.store, world.recorder, { instanceId: "unit-a", takeover: true, store: view });
    let begunAtMs: number | undefined;
    let abortedAtMs: number | undefined;
    void elector
      .tryLead((term: LeadershipTerm) => {
        // The record write (the first heartbeat) has landed, in no fake time: the deadline is 2.5 s from now.
        begunAtMs = Date.now();
        view.cut = true; // nothing this process sends from now on lands or answers
        term.signal.addEventListener("abort", () => (abortedAtMs = Date.now()), { once: true });
        return untilAborted(term);
      })
      .catch(() => undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(begunAtMs).toBeDefined();
    await vi.advanceTimersByTimeAsync(5_000);
    expect(abortedAtMs).toBeDefined();
    expect((abortedAtMs ?? Infinity) - (begunAtMs ?? 0)).toBe(2500);
    expect(world.recorder.ofType("lease-lost")).toMatchObject([{ reason: "deadline" }]);
  });
});
