import { describe, expect, it } from "vitest";
import {
  MAX_ENDED_KEPT,
  liveGrants,
  recordEnds,
  tidied,
  unitHasLiveGrant,
  useByPool,
  type Grant,
  type Ledger,
} from "../../src/coordination/state/grantLedger";

/** A grant of job-1's unit at item 0, granted at 0, expiring at 600 s. */
const grant = (id: string, extra: Partial<Grant> = {}): Grant => ({
  id,
  jobId: "job-1",
  first: 0,
  count: 2,
  grantedAtMs: 0,
  expiresAtMs: 600_000,
  holds: [{ pool: "k:sum", c: 2 }],
  ...extra,
});
const ledgerOf = (...grants: Grant[]): Ledger => ({ v: 1, grants, waiting: {}, limits: {} });

describe("the grant ledger's ends of a unit given back held (issue 42)", () => {
  it("a grant that ended held does not cover its unit: a later give-back of the unit is sent again, not dropped", () => {
    // Found by the simulator (seed 20261690): the held grant's end lies in the future, so it seemed live, and the
    // give-back of the unit's next grant was acknowledged without a resend; the job never ended.
    const held = recordEnds(ledgerOf(grant("old")), [{ id: "old", held: true }], 10_000, 1);
    expect(unitHasLiveGrant(held, { jobId: "job-1", first: 0 }, "new", 10_000)).toBe(false);
    // A grant with no end known still covers it.
    expect(unitHasLiveGrant(ledgerOf(grant("out")), { jobId: "job-1", first: 0 }, "new", 10_000)).toBe(true);
  });

  it("in one batch, the claimant's own end wins over a held one, whichever comes first", () => {
    for (const ends of [
      [
        { id: "g", held: true },
        { id: "g", lastStartAgoMs: 0 },
      ],
      [
        { id: "g", lastStartAgoMs: 0 },
        { id: "g", held: true },
      ],
    ]) {
      const ledger = recordEnds(ledgerOf(grant("g")), ends, 10_000, 1);
      expect(useByPool(ledger, 10_000).get("k:sum")?.running ?? 0).toBe(0); // its shares are free at once
    }
  });
});

describe("the grant ledger's size over a long job (issue 42)", () => {
  it("keeps at most MAX_ENDED_KEPT ended grants, the newest, and every grant that still holds shares", () => {
    const ended = Array.from({ length: 500 }, (_, index) =>
      grant(`e${index}`, { first: index * 2, endedAtMs: 1_000 + index, starts: 2 }),
    );
    const live = Array.from({ length: 30 }, (_, index) => grant(`l${index}`, { first: 5_000 + index * 2 }));
    const ledger = tidied(ledgerOf(...ended, ...live), 10_000);
    const ids = new Set(ledger.grants.map((kept) => kept.id));
    expect(ledger.grants).toHaveLength(MAX_ENDED_KEPT + 30);
    for (const kept of live) expect(ids.has(kept.id)).toBe(true);
    expect(ids.has("e499")).toBe(true);
    expect(ids.has(`e${500 - MAX_ENDED_KEPT}`)).toBe(true);
    expect(ids.has(`e${499 - MAX_ENDED_KEPT}`)).toBe(false);
    // Only the grants that hold shares count against MAX_GRANTS.
    expect(liveGrants(ledger, 10_000)).toBe(30);
  });
});
