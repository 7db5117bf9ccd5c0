import { describe, expect, it } from "vitest";
import { MAX_EXPIRIES, MAX_LOST_DELIVERIES, MAX_REGRANTS } from "../../src/coordination/flow/grant";
import { withResends } from "../../src/coordination/flow/resend";
import { Bitmap } from "../../src/coordination/state/bitmap";
import type { JobState } from "../../src/coordination/state/jobState";

/** A running job of 8 items, all dispatched, none done. */
function running(): JobState {
  return {
    v: 1,
    id: "job-1",
    kind: "sum",
    params: null,
    itemCount: 8,
    chunkSize: 1000,
    createdAtMs: 0,
    registeredAtMs: 0,
    status: "running",
    unitMaxItems: 4,
    unitMaxBytes: 45 * 1024,
    dispatched: 8,
    doneBits: Bitmap.empty(8).toBase64(),
    failedBits: Bitmap.empty(8).toBase64(),
    doneCount: 0,
    failedCount: 0,
    aggregate: 0,
    failures: [],
    lastEpoch: 1,
  };
}

describe("a unit's grants: expiries and give-backs are bounded apart (issue 42)", () => {
  it("a unit whose grants expired MAX_EXPIRIES times fails its open items, saying its items take longer than a grant", () => {
    const out = withResends(running(), [{ first: 0, count: 4, regrants: MAX_EXPIRIES, expiries: MAX_EXPIRIES }]);
    expect(out?.resend).toEqual([]);
    expect(out?.failed.map((failure) => failure.item)).toEqual([0, 1, 2, 3]);
    expect(out?.failed[0]?.reason).toMatch(/expired before it finished: its items take longer than a grant lasts/);
  });

  it("give-backs (shutdowns, failed runs) do not count as expiries: the unit is sent again until MAX_REGRANTS in all", () => {
    const givenBack = withResends(running(), [{ first: 0, count: 4, regrants: MAX_REGRANTS - 1, expiries: 1 }]);
    expect(givenBack).toEqual({
      resend: [{ first: 0, count: 4, regrants: MAX_REGRANTS - 1, expiries: 1 }],
      failed: [],
    });
    const tooMany = withResends(running(), [{ first: 4, count: 4, regrants: MAX_REGRANTS, expiries: 1 }]);
    expect(tooMany?.failed).toHaveLength(4);
    expect(tooMany?.failed[0]?.reason).toMatch(/had 20 grants, 1 of them expired and the others given back/);
  });

  it("a unit whose deliveries were lost MAX_LOST_DELIVERIES times (their process died or froze running it) fails its open items", () => {
    const once = withResends(running(), [{ first: 0, count: 4, regrants: 1, lost: MAX_LOST_DELIVERIES - 1 }]);
    expect(once?.failed).toEqual([]);
    const out = withResends(running(), [{ first: 0, count: 4, regrants: 2, lost: MAX_LOST_DELIVERIES }]);
    expect(out?.failed.map((failure) => failure.item)).toEqual([0, 1, 2, 3]);
    expect(out?.failed[0]?.reason).toMatch(/an item may be killing its process/);
  });
});
