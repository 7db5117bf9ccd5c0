import { useByPool, type Hold, type Ledger, type PoolUse } from "../state/grantLedger.js";
import type { NamedPool } from "./pools.js";

/**
 * How much of each limit a unit gets. A unit's share of a pool is what it may run at once (`c`) and the rate permits
 * it may use (`r`, each once per the pool's window); the sum of the shares the ledger holds never passes a pool's
 * limit, which is what makes the limit global: every item runs under a share, and a share is written down before its
 * unit is sent.
 */

/**
 * A unit of a concurrency-limited pool carries this many items per share, run back to back, while the leader knows
 * nothing of how long the pool's items take; once units of the pool have ended, as many as its share runs in
 * {@link TARGET_UNIT_MS} (never fewer than this): the gap between a unit's end and the next one's start then costs a
 * few percent of the limit whatever the items' time.
 */
export const ITEMS_PER_SHARE = 16;
/** Ended grants of a pool whose time per item, per share, is averaged (the newest). */
export const ITEM_TIME_SAMPLES = 16;
/**
 * A unit of a rate-limited pool carries about this long of starts at its share, in ms: long enough that the gap between
 * one unit's end and the next one's start (a fold, a dispatch, a worker's poll) costs a few percent of the rate, short
 * enough that a job waiting on the pool gets its turn soon (the shares come back as units end).
 */
export const TARGET_UNIT_MS = 20_000;
/**
 * The shortest item a rate share is sized for, in ms. A unit starts at most `perUnit` items at once, so one whose
 * items take this long uses at most `perUnit × windowMs / RATE_SLOT_ITEM_MS` permits of a window; a unit gets no more
 * (`rateShareCap`), and the rest of the pool's permits go to other units. Without it the first unit took every permit
 * of the window and ran its items one at a time: a job limited to 20 starts per second, of 200 ms items, at the
 * default `WORK_UNIT_CONCURRENCY` of 1, ran 4 a second (`npm run bench:limits -- --only sustained`). Items longer
 * than this use less than their unit's share: a kind whose items are slow sets `concurrency` to at least its rate
 * times its items' time.
 */
export const RATE_SLOT_ITEM_MS = 250;
/** Most distinct keys one unit carries (its message names each key's share). */
export const MAX_KEYS_PER_UNIT = 16;
/**
 * How long a unit's first grant lasts by default, in ms (`FLOW_GRANT_SECONDS` sets it): its worker starts no item after
 * it and stops the unit (sending the grant back), so a grant whose unit was never sent, or whose process died, frees
 * its shares at last. Ten minutes: the Functions host's visibility of a message it runs, so a crashed worker's unit,
 * which the host hands out again after that long, costs no more. Each grant a unit gets after one of its grants expired
 * lasts twice as long as that one (at most 8 times the first: {@link lifetimeMs}); a grant given back (a shutdown, a
 * failed run) does not make the next one longer.
 */
export const GRANT_LIFETIME_MS = 600_000;
/** Grants of a unit that may expire before its items fail instead: its items take longer than a grant lasts. */
export const MAX_EXPIRIES = 5;
/**
 * Deliveries of a unit that may be lost — the process running it died or froze, and a later delivery found its claim
 * never reported — before its items fail instead: an item that kills its process would hold its pool for a grant's
 * lifetime each time (the later delivery cannot run under the grant while the earlier one may be frozen, not dead).
 */
export const MAX_LOST_DELIVERIES = 2;
/**
 * Grants a unit may have in all before its items fail instead: each expired or was given back (a shutdown, a run that
 * failed, a claim lost). Give-backs are the platform's doing, not the unit's, so they are allowed more than expiries;
 * the bound keeps a unit that can never run from being sent for ever.
 */
export const MAX_REGRANTS = 20;

/** The most rate permits of a window one unit gets: what `perUnit` items at once of {@link RATE_SLOT_ITEM_MS} start. */
export function rateShareCap(perUnit: number, windowMs: number): number {
  return Math.max(1, perUnit * Math.ceil(windowMs / RATE_SLOT_ITEM_MS));
}

/**
 * How long the grant of a unit lasts whose grants before it expired `expiries` times, in ms, when a first grant lasts
 * `firstMs` (`FLOW_GRANT_SECONDS`): doubling with each expiry, to at most 8 times.
 */
export function lifetimeMs(expiries: number, firstMs = GRANT_LIFETIME_MS): number {
  return Math.min(8 * firstMs, firstMs * 2 ** Math.max(0, expiries));
}

/**
 * How a unit's grant ended without its result: it `expired`; its copy found an earlier delivery's claim never reported
 * (`lost`: that delivery's process died or froze while running it); or it was given back (a shutdown, a failed run).
 */
export type GrantLoss = "expired" | "lost" | "given back";

/** The grant counts of a unit's next grant after `grant`, which ended as `how`. */
export function nextGrant(
  grant: { regrants?: number | undefined; expiries?: number | undefined; lost?: number | undefined } | undefined,
  how: GrantLoss,
): { regrants: number; expiries?: number; lost?: number } {
  const expiries = (grant?.expiries ?? 0) + (how === "expired" ? 1 : 0);
  const lost = (grant?.lost ?? 0) + (how === "lost" ? 1 : 0);
  return { regrants: (grant?.regrants ?? 0) + 1, ...(expiries > 0 ? { expiries } : {}), ...(lost > 0 ? { lost } : {}) };
}

/**
 * Per pool, how long one share took per item in the units of the pool that ended last, in ms (their grant to their
 * end, the gap to the worker included, times their share over their items started): the median of the newest
 * {@link ITEM_TIME_SAMPLES}. Only units that reported their end and started items count (not an expiry, a give-back
 * or a unit given back held).
 */
export function itemTimes(ledger: Pick<Ledger, "grants">): Map<string, number> {
  const samples = new Map<string, { atMs: number; ms: number }[]>();
  for (const grant of ledger.grants) {
    if (grant.endedAtMs === undefined || grant.held === true || (grant.starts ?? 0) <= 0) continue;
    const starts = grant.starts ?? 1;
    for (const hold of grant.holds) {
      if ((hold.c ?? 0) <= 0) continue;
      const ms = (Math.max(0, grant.endedAtMs - grant.grantedAtMs) * (hold.c ?? 1)) / starts;
      const list = samples.get(hold.pool) ?? [];
      list.push({ atMs: grant.endedAtMs, ms });
      samples.set(hold.pool, list);
    }
  }
  const times = new Map<string, number>();
  for (const [pool, list] of samples) {
    const newest = list
      .sort((a, b) => b.atMs - a.atMs)
      .slice(0, ITEM_TIME_SAMPLES)
      .map((sample) => sample.ms)
      .sort((a, b) => a - b);
    times.set(pool, newest[Math.floor(newest.length / 2)] ?? 0);
  }
  return times;
}

/** Items a share of a concurrency pool carries, given how long the pool's items took per share (undefined: unknown). */
export function itemsPerShare(itemMs: number | undefined): number {
  if (itemMs === undefined) return ITEMS_PER_SHARE;
  return Math.max(ITEMS_PER_SHARE, Math.floor(TARGET_UNIT_MS / Math.max(1, itemMs)));
}

/**
 * A unit's items under one limit: `byTime`, or its share's part of the job's tail (`ofTail`) when that is less — but
 * not under a quarter of `byTime`: a small job under a generous limit goes out in a few units, not one per item.
 */
function tailCap(byTime: number, ofTail: number): number {
  return Math.min(byTime, Math.max(Math.ceil(byTime / 4), ofTail));
}

/** What is free in each pool during one dispatch: the ledger's use, plus what this dispatch has granted so far. */
export class PoolBook {
  private readonly use: Map<string, PoolUse>;
  private readonly times: Map<string, number>;

  /** `epoch`: the leader's, on whose clock its own ends were recorded. */
  constructor(ledger: Pick<Ledger, "grants">, nowMs: number, epoch: number) {
    this.use = useByPool(ledger, nowMs, epoch);
    this.times = itemTimes(ledger);
  }

  /** The shares still free in a pool (Infinity for what it does not limit). */
  free(pool: NamedPool): { c: number; r: number } {
    const use = this.use.get(pool.id) ?? { running: 0, ratePermits: 0 };
    const { concurrency, rate } = pool.limit;
    return {
      c: concurrency === undefined ? Infinity : Math.max(0, concurrency - use.running),
      r: rate === undefined ? Infinity : Math.max(0, rate.permits - use.ratePermits),
    };
  }

  /** Whether a unit could get a share of at least one of each thing the pool limits. */
  canStart(pool: NamedPool): boolean {
    const free = this.free(pool);
    return free.c >= 1 && free.r >= 1;
  }

  /**
   * Most items a unit may carry for this pool, given `perUnit` (items of a unit run at once) and `remaining` (items of
   * its job still to send): as many as its share runs in {@link TARGET_UNIT_MS} ({@link itemsPerShare}), as many as
   * its rate share starts in that time, and no more than its share's part of what remains over the whole limit — so a
   * job's last units shrink as its items run out, and the shares that come back one by one share its tail.
   */
  itemCap(pool: NamedPool, perUnit: number, remaining: number): number {
    const free = this.free(pool);
    const { concurrency, rate } = pool.limit;
    let cap = Infinity;
    if (concurrency !== undefined) {
      const share = Math.min(free.c, perUnit);
      const byTime = share * itemsPerShare(this.times.get(pool.id));
      cap = Math.min(cap, tailCap(byTime, Math.ceil((remaining * share) / concurrency)));
    }
    if (rate !== undefined) {
      const share = Math.min(free.r, rateShareCap(perUnit, rate.windowMs));
      const byTime = Math.max(1, Math.floor((share * TARGET_UNIT_MS) / rate.windowMs));
      cap = Math.min(cap, tailCap(byTime, Math.ceil((remaining * share) / rate.permits)));
    }
    return Math.max(1, cap);
  }

  /** A unit's share of a pool for `items` of its items, taken from what is free. */
  take(pool: NamedPool, items: number, perUnit: number): Hold {
    const free = this.free(pool);
    const { concurrency, rate } = pool.limit;
    const hold: Hold = { pool: pool.id };
    if (concurrency !== undefined) hold.c = Math.min(free.c, perUnit, items);
    if (rate !== undefined) {
      hold.r = Math.min(free.r, items, rateShareCap(perUnit, rate.windowMs));
      hold.windowMs = rate.windowMs;
    }
    const use = this.use.get(pool.id) ?? { running: 0, ratePermits: 0 };
    this.use.set(pool.id, { running: use.running + (hold.c ?? 0), ratePermits: use.ratePermits + (hold.r ?? 0) });
    return hold;
  }
}
