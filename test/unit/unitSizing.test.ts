import { describe, expect, it } from "vitest";
import {
  ITEMS_PER_SHARE,
  PoolBook,
  TARGET_UNIT_MS,
  itemTimes,
  itemsPerShare,
  rateShareCap,
} from "../../src/coordination/flow/grant";
import type { NamedPool } from "../../src/coordination/flow/pools";
import type { Grant, Ledger } from "../../src/coordination/state/grantLedger";

/**
 * How big a limited unit is (issue 42's utilisation goal): the gap between a unit's end and its share's next unit
 * costs the limit's use, so a unit carries about TARGET_UNIT_MS of items, and a job's tail is spread over the shares.
 */

const pool: NamedPool = { id: "k:sum", limit: { concurrency: 8 } };
const rated: NamedPool = { id: "k:rated", limit: { rate: { limit: 20, periodMs: 1000, permits: 20, windowMs: 1000 } } };

/** An ended grant of `pool` for a unit of `starts` items at `c` shares that took `ms` from grant to end. */
const ended = (index: number, ms: number, starts: number, c = 1, extra: Partial<Grant> = {}): Grant => ({
  id: `g${index}`,
  jobId: "job-1",
  first: index * starts,
  count: starts,
  grantedAtMs: 100_000 + index * 1000,
  expiresAtMs: 700_000,
  endedAtMs: 100_000 + index * 1000 + ms,
  starts,
  holds: [{ pool: pool.id, c }],
  ...extra,
});
const ledgerOf = (...grants: Grant[]): Ledger => ({ v: 1, grants, waiting: {}, limits: {} });

describe("the size of a limited unit (issue 42)", () => {
  it("carries ITEMS_PER_SHARE items a share while no unit of its pool has ended: the items' time is unknown", () => {
    const book = new PoolBook(ledgerOf(), 1_000_000, 1);
    expect(book.itemCap(pool, 1, 100_000)).toBe(ITEMS_PER_SHARE);
    expect(book.itemCap(pool, 2, 100_000)).toBe(2 * ITEMS_PER_SHARE);
  });

  it("once units have ended, carries what its share runs in TARGET_UNIT_MS, from the median of the newest", () => {
    // Units of 16 items at one share took 3.2 s each (200 ms an item, the gap included); one outlier took a minute.
    const grants = [...Array.from({ length: 6 }, (_, index) => ended(index, 3_200, 16)), ended(6, 60_000, 16)];
    expect(itemTimes(ledgerOf(...grants)).get(pool.id)).toBe(200);
    const book = new PoolBook(ledgerOf(...grants), 1_000_000, 1);
    expect(book.itemCap(pool, 1, 100_000)).toBe(TARGET_UNIT_MS / 200);
    expect(book.itemCap(pool, 2, 100_000)).toBe((2 * TARGET_UNIT_MS) / 200);
  });

  it("never carries fewer than ITEMS_PER_SHARE a share for slow items, and learns nothing from units that did not report", () => {
    const slow = new PoolBook(ledgerOf(ended(0, 160_000, 16)), 1_000_000, 1);
    expect(slow.itemCap(pool, 1, 100_000)).toBe(ITEMS_PER_SHARE);
    expect(itemsPerShare(undefined)).toBe(ITEMS_PER_SHARE);
    // A unit given back held, or one that started nothing (an expiry, a give-back), says nothing of the items' time.
    const unknown = ledgerOf(ended(0, 10, 16, 1, { held: true }), ended(1, 10, 16, 1, { starts: 0 }));
    expect(itemTimes(unknown).has(pool.id)).toBe(false);
  });

  it("spreads a job's tail over the limit's shares, down to a quarter of a full unit", () => {
    const book = new PoolBook(ledgerOf(...Array.from({ length: 3 }, (_, index) => ended(index, 3_200, 16))), 0, 1);
    const full = TARGET_UNIT_MS / 200;
    expect(book.itemCap(pool, 1, 100_000)).toBe(full);
    // 400 items left over 8 shares: 50 a share, so the shares coming back one by one end about together.
    expect(book.itemCap(pool, 1, 400)).toBe(50);
    expect(book.itemCap(pool, 1, 8)).toBe(Math.ceil(full / 4));
    // The same for a rate: a unit's share of the window's permits, over the job's items left.
    const rate = new PoolBook(ledgerOf(), 0, 1);
    const share = rateShareCap(1, 1000);
    const fullRate = (share * TARGET_UNIT_MS) / 1000;
    expect(rate.itemCap(rated, 1, 100_000)).toBe(fullRate);
    expect(rate.itemCap(rated, 1, 200)).toBe(Math.ceil((200 * share) / 20));
    expect(rate.itemCap(rated, 1, 10)).toBe(Math.ceil(fullRate / 4));
  });
});
