import { delay, throwIfAborted } from "../../library/util/delay.js";
import type { WorkGrant } from "../ports/messages.js";
import { countedWindowMs } from "../state/grantLedger.js";

/**
 * Holds one copy of a granted unit to its grant, in the worker: an item starts only when every pool it counts against
 * has a share free — fewer than `c` of the unit's items of that pool running, and fewer than `r` of them started in
 * the last `w` ms (each rate permit used at most once a window: a sliding log of the last `r` starts) — and before the
 * grant expires. The leader keeps the sum of the shares it has granted within each limit, so the limit holds across
 * every worker: within a window of `w`, a pool's starts come from copies whose grants were all held at once.
 * Intervals are measured on the monotonic clock, each window a little longer than granted (`countedWindowMs`: timer
 * granularity, drift); a start counts from the kind's call, however late it came after the take. The expiry, which
 * the leader set, is read on the wall clock.
 */
export class UnitGate {
  private readonly running: number[];
  /**
   * Per pool, its starts within the last window, in the order taken: each an entry whose time moves from the take to
   * the kind's call when `started()` says so (other takes may come between, in an `acquire` that awaited).
   */
  private readonly starts: { at: number }[][];
  /** Each item's pools (indexes into the grant's), by the item's offset in the unit. */
  private readonly itemPools: number[][];
  private changed = signalled();
  private started = 0;
  private lastStartMono: number | undefined;

  constructor(
    private readonly grant: WorkGrant,
    itemCount: number,
    private readonly clock: { monotonicMs: () => number; nowMs: () => number } = {
      monotonicMs: () => performance.now(),
      nowMs: () => Date.now(),
    },
  ) {
    this.running = grant.pools.map(() => 0);
    this.starts = grant.pools.map(() => []);
    this.itemPools = [];
    const keyRuns = grant.keys ?? [[-1, itemCount]];
    for (const [pool, items] of keyRuns)
      for (let item = 0; item < items; item++) this.itemPools.push(pool < 0 ? grant.every : [...grant.every, pool]);
  }

  /** The longest rate window among the grant's pools, in ms (0 when none limits a rate). */
  get longestWindowMs(): number {
    return Math.max(0, ...this.grant.pools.map((pool) => (pool.r === undefined ? 0 : countedWindowMs(pool.w ?? 0))));
  }

  /** Items started through the gate so far. */
  get startCount(): number {
    return this.started;
  }

  /** How long ago the last item started, in whole ms rounded down; undefined when none has. */
  lastStartAgoMs(): number | undefined {
    return this.lastStartMono === undefined
      ? undefined
      : Math.max(0, Math.floor(this.clock.monotonicMs() - this.lastStartMono));
  }

  /** The grant's id. */
  get grantId(): string {
    return this.grant.id;
  }

  /** Milliseconds until the grant expires by the wall clock (0 once it has). */
  msUntilExpiry(): number {
    return Math.max(0, this.grant.expiresAtMs - this.clock.nowMs());
  }

  /** Whether the grant has expired by the wall clock. */
  expired(): boolean {
    return this.clock.nowMs() >= this.grant.expiresAtMs;
  }

  /**
   * Takes the shares of the item at `offset` if every pool it counts against has one free now — synchronously: the
   * caller calls the kind in the same run, then `started()` — and returns them; undefined when it must wait
   * ({@link ready}). Throws {@link GrantExpiredError} once the grant has expired.
   */
  tryTake(offset: number): TakenShares | undefined {
    if (this.expired()) throw new GrantExpiredError(this.grant.id);
    const pools = this.poolsOf(offset);
    const now = this.clock.monotonicMs();
    return this.waitFor(pools, now) === 0 ? this.take(pools, now) : undefined;
  }

  /**
   * Resolves when the item at `offset` may have its shares: a share was given back, a rate permit came free, or the
   * grant expired ({@link tryTake} then throws). Rejects with the signal's reason when it aborts first.
   */
  async ready(offset: number, signal: AbortSignal): Promise<void> {
    throwIfAborted(signal);
    const waitMs = this.waitFor(this.poolsOf(offset), this.clock.monotonicMs());
    if (waitMs === 0) return;
    const done = new AbortController();
    const abortSignal = AbortSignal.any([signal, done.signal]);
    // Whole ms: a window lengthened by a fraction (countedWindowMs) must not wake a timer before it has passed.
    const timed = delay(Math.ceil(Math.min(waitMs, Math.max(1, this.msUntilExpiry()))), { abortSignal }).catch(
      () => undefined,
    );
    await Promise.race([this.changed.promise, timed]);
    done.abort(); // the timer goes with it
    throwIfAborted(signal);
  }

  /** Waits for and takes the item's shares ({@link tryTake} until it takes them), with nothing to do between. */
  async acquire(offset: number, signal: AbortSignal): Promise<TakenShares> {
    for (;;) {
      const release = this.tryTake(offset);
      if (release !== undefined) return release;
      await this.ready(offset, signal);
    }
  }

  private poolsOf(offset: number): readonly number[] {
    return this.itemPools[offset] ?? this.grant.every;
  }

  /** 0 when every pool has a share free now; otherwise how long until a rate permit may come free (Infinity: none). */
  private waitFor(pools: readonly number[], now: number): number {
    let waitMs = 0;
    for (const index of pools) {
      const pool = this.grant.pools[index];
      if (pool === undefined) continue;
      if (pool.c !== undefined && (this.running[index] ?? 0) >= pool.c) waitMs = Infinity;
      if (pool.r !== undefined) {
        // Fewer than r starts in the last window (lengthened by the margin): then no window of w holds more than r.
        const window = countedWindowMs(pool.w ?? 0);
        const recent = (this.starts[index] ?? []).filter((entry) => now - entry.at < window);
        this.starts[index] = recent; // older ones never count again: times only grow
        if (recent.length >= pool.r) {
          const times = recent.map((entry) => entry.at).sort((a, b) => a - b);
          waitMs = Math.max(waitMs, (times[recent.length - pool.r] ?? now) + window - now);
        }
      }
    }
    return waitMs;
  }

  private take(pools: readonly number[], now: number): TakenShares {
    for (const index of pools) {
      const pool = this.grant.pools[index];
      if (pool === undefined) continue;
      if (pool.c !== undefined) this.running[index] = (this.running[index] ?? 0) + 1;
    }
    const entry = { at: now };
    for (const index of pools) if (this.grant.pools[index]?.r !== undefined) this.starts[index]?.push(entry);
    this.started++;
    this.lastStartMono = Math.max(this.lastStartMono ?? now, now);
    let released = false;
    return {
      started: () => {
        entry.at = Math.max(entry.at, this.clock.monotonicMs());
        this.lastStartMono = Math.max(this.lastStartMono ?? entry.at, entry.at);
      },
      release: () => {
        if (released) return;
        released = true;
        for (const index of pools)
          if (this.grant.pools[index]?.c !== undefined) this.running[index] = (this.running[index] ?? 1) - 1;
        const changed = this.changed;
        this.changed = signalled();
        changed.resolve();
      },
    };
  }
}

/**
 * An item's shares, taken: `started()` once the kind has been called (its synchronous start has run: the start the
 * rate counts is then no earlier than the kind's own, however long the process was descheduled between the take and
 * the call), `release()` once the item settled (its concurrency back).
 */
export interface TakenShares {
  started(): void;
  release(): void;
}

/** A promise and what settles it: the gate's "a share was given back". */
function signalled(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** A granted unit's grant expired before all its items started: the unit goes back to the leader, whole. */
export class GrantExpiredError extends Error {
  readonly code = "GrantExpired";
  constructor(readonly grantId: string) {
    super(`its grant ${grantId} expired`);
    this.name = "GrantExpiredError";
  }
}
