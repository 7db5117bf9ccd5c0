import { useByPool, type Hold, type Ledger, type PoolUse } from "../state/grantLedger.js";
import type { NamedPool } from "./pools.js";

/**
 * How much of each limit a unit gets. A unit's share of a pool is what it may run at once (`c`) and the rate permits
 * it may use (`r`, each once per the pool's window); the sum of the shares the ledger holds never passes a pool's
 * limit, which is what makes the limit global: every item runs under a share, and a share is written down before its
 * unit is sent.
 */

/** A unit of a concurrency-limited pool carries at most this many items per share: it runs them back to back. */
export const ITEMS_PER_SHARE = 16;
/**
 * A unit of a rate-limited pool carries about this long of starts at its share, in ms: long enough that the gap between
 * one unit's end and the next one's start (a fold, a dispatch, a worker's poll) costs a few percent of the rate, short
 * enough that a job waiting on the pool gets its turn soon (the shares come back as units end).
 */
export const TARGET_UNIT_MS = 10_000;
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

/** What is free in each pool during one dispatch: the ledger's use, plus what this dispatch has granted so far. */
export class PoolBook {
  private readonly use: Map<string, PoolUse>;

  /** `epoch`: the leader's, on whose clock its own ends were recorded. */
  constructor(ledger: Pick<Ledger, "grants">, nowMs: number, epoch: number) {
    this.use = useByPool(ledger, nowMs, epoch);
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
   * its job still to send): as many as its share runs {@link ITEMS_PER_SHARE} times over, as many as its rate share
   * starts in {@link TARGET_UNIT_MS}, and no more than its share's part of what remains — so a job's units together use
   * every share free, and end about together.
   */
  itemCap(pool: NamedPool, perUnit: number, remaining: number): number {
    const free = this.free(pool);
    const { concurrency, rate } = pool.limit;
    let cap = Infinity;
    if (concurrency !== undefined) {
      const share = Math.min(free.c, perUnit);
      cap = Math.min(share * ITEMS_PER_SHARE, Math.ceil((remaining * share) / Math.max(1, free.c)));
    }
    if (rate !== undefined) {
      const share = Math.min(free.r, rateShareCap(perUnit, rate.windowMs));
      const byTime = Math.max(1, Math.floor((share * TARGET_UNIT_MS) / rate.windowMs));
      cap = Math.min(cap, byTime);
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
