import { z } from "zod";
import { ConcurrentUpdateError } from "../../library/errors.js";
import type { FencedStateStore, Versioned } from "../../library/fencing/FencedStateStore.js";
import type { StateStore } from "../../library/fencing/StateStore.js";
import type { Abortable } from "../../library/util/delay.js";

/**
 * The grant ledger (`limits.json`, state container, fenced like every document the leader writes): every share of a
 * limit the leader has handed a work unit and not yet taken back. A new leader cannot know what the old one granted
 * unless it was written down, so a grant is written here before its unit is sent; the leader's counts of what is in
 * use are this document, nothing in memory. Read leniently, as every stored document is.
 */

/** Where the ledger lives in the state container. */
export const LEDGER_KEY = "limits.json";

/**
 * How long past its expiry a grant whose copy never reported still holds its permits, in ms: the worker stops starting
 * items at the expiry and aborts those running (a kind stops soon after its abort signal), so this covers that and a
 * skew of up to half of it between the leader's clock and the worker's.
 */
export const GRANT_GRACE_MS = 60_000;

/**
 * What a rate window is lengthened by, in ms, in the worker's gate and in the leader's hold of rate permits: the time
 * between a share's take and the item's start as the kind sees it (synchronous code, a few microseconds; timers may
 * also fire a millisecond early), so no window of the granted length ever holds more starts than the limit.
 */
export const RATE_MARGIN_MS = 5;

/**
 * A rate window as the gate and the leader count it: the granted window, lengthened by {@link RATE_MARGIN_MS} and by
 * a thousandth of itself (a monotonic clock may drift by up to that over a long window), in ms.
 */
export function countedWindowMs(windowMs: number): number {
  return windowMs + RATE_MARGIN_MS + windowMs / 1000;
}

/**
 * How far apart two instances' wall clocks may be, in ms: a grant ended by one leader (its rate permits held a window
 * after the last start, on that leader's clock) is counted by another leader as held that much longer. Azure keeps its
 * hosts' clocks far closer; a leader counting its own ends adds nothing.
 */
export const CLOCK_SKEW_MS = 1000;

/**
 * Most grants the ledger holds that still hold shares: a unit is not granted while this many do (its size stays
 * bounded). Ended grants kept for the status page's starts do not count: {@link MAX_ENDED_KEPT} bounds them.
 */
export const MAX_GRANTS = 1000;

/**
 * Most ended grants the ledger keeps once they hold nothing (the newest), for the status page's starts per period: a
 * long job ends a unit every second or so, and these are kept up to an hour.
 */
export const MAX_ENDED_KEPT = 200;

/** How many of the ledger's grants still hold shares at `nowMs`: what {@link MAX_GRANTS} bounds. */
export function liveGrants(ledger: Pick<Ledger, "grants">, nowMs: number, epoch?: number): number {
  return ledger.grants.filter((grant) => holdsAnything(grant, nowMs, epoch)).length;
}

/** A unit's share of one pool: items it may run at once (`c`), rate permits it may use (`r`, once per `windowMs`). */
export const holdSchema = z.looseObject({
  pool: z.string(),
  c: z.number().int().min(0).optional(),
  r: z.number().int().min(0).optional(),
  windowMs: z.number().min(0).optional(),
});
export type Hold = z.infer<typeof holdSchema>;

/** One grant: a unit copy's shares of every pool it touches, until its end is known (or it expires). */
export const grantSchema = z.looseObject({
  /** Random: a result names it to give the shares back, and a forged message cannot guess it. */
  id: z.string(),
  jobId: z.string(),
  first: z.number().int().min(0),
  count: z.number().int().min(1),
  grantedAtMs: z.number(),
  /** The worker starts no item at or after this (its clock) and aborts those running then. */
  expiresAtMs: z.number(),
  holds: z.array(holdSchema),
  /** How many grants this unit had before this one (expired, or given back unstarted). */
  regrants: z.number().int().min(0).optional(),
  /** How many of those expired (absent: none): each doubles the next grant's lifetime. */
  expiries: z.number().int().min(0).optional(),
  /** How many of its deliveries were lost (their process died or froze while running it; absent: none). */
  lost: z.number().int().min(0).optional(),
  /** When the copy's end became known (its result, its poison, or its expiry): its concurrency is free then. */
  endedAtMs: z.number().optional(),
  /** Latest time (leader's clock) any of its items may have started: its rate permits are free a window after. */
  lastStartMs: z.number().optional(),
  /** Items its copy started, as its result reported (for the status page's starts per period). */
  starts: z.number().int().min(0).optional(),
  /**
   * Its end was recorded held (a later delivery gave it back while the one that claimed it might still run): the
   * claimant's own report, when it comes, proves that one ended, and replaces this end.
   */
  held: z.literal(true).optional(),
  /** The epoch of the leader that recorded its end, on whose clock `endedAtMs` and `lastStartMs` are. */
  endedByEpoch: z.number().int().min(0).optional(),
});
export type Grant = z.infer<typeof grantSchema>;

/** Per pool: the last time a unit waited for it, and how many items of the jobs that waited had not been sent. */
export const waitingSchema = z.looseObject({ atMs: z.number(), items: z.number().int().min(0) });

/** A pool's limit as the leader last granted under it (for the status page and the metrics). */
export const poolLimitSchema = z.looseObject({
  concurrency: z.number().int().min(1).optional(),
  rate: z
    .looseObject({ limit: z.number(), periodMs: z.number(), permits: z.number(), windowMs: z.number() })
    .optional(),
});
export type StoredPoolLimit = z.infer<typeof poolLimitSchema>;

export const ledgerSchema = z.looseObject({
  v: z.literal(1),
  grants: z.array(grantSchema),
  waiting: z.record(z.string(), waitingSchema).default({}),
  /** The limits of the pools the grants and the waiting notes name (the leader writes them with its grants). */
  limits: z.record(z.string(), poolLimitSchema).default({}),
});
export type Ledger = z.infer<typeof ledgerSchema>;

/** An empty ledger. */
export function emptyLedger(): Ledger {
  return { v: 1, grants: [], waiting: {}, limits: {} };
}

/** Whether a grant's concurrency shares are still held at `nowMs`. */
export function holdsConcurrency(grant: Grant, nowMs: number): boolean {
  // Ended: until its end (in the future for a grant another copy may hold until its expiry: `GrantEnd.held`).
  return nowMs < (grant.endedAtMs ?? grant.expiresAtMs + GRANT_GRACE_MS);
}

/**
 * Until when (the reading leader's clock) a grant's rate permits in `hold` are held: a window after its last start when
 * its end is known (plus {@link CLOCK_SKEW_MS} when another leader than `epoch`'s recorded it), a window after its
 * expiry and grace otherwise.
 */
export function rateHeldUntil(grant: Grant, hold: Hold, epoch?: number): number {
  const window = countedWindowMs(hold.windowMs ?? 0);
  if (grant.endedAtMs === undefined) return grant.expiresAtMs + GRANT_GRACE_MS + window;
  const skew = epoch !== undefined && grant.endedByEpoch === epoch ? 0 : CLOCK_SKEW_MS;
  return grant.lastStartMs === undefined ? grant.endedAtMs : grant.lastStartMs + window + skew;
}

/** Whether a grant still holds anything at `nowMs` (otherwise it can leave the ledger). */
export function holdsAnything(grant: Grant, nowMs: number, epoch?: number): boolean {
  if (holdsConcurrency(grant, nowMs)) return true;
  return grant.holds.some((hold) => (hold.r ?? 0) > 0 && nowMs < rateHeldUntil(grant, hold, epoch));
}

/** What a pool has in use at a moment: items that may be running, and rate permits held. */
export interface PoolUse {
  running: number;
  ratePermits: number;
}

/**
 * Every pool's use at `nowMs`, summed over the grants that still hold it, as the leader of `epoch` counts it (a leader
 * of another epoch, or none: with the clock skew allowed between instances).
 */
export function useByPool(ledger: Pick<Ledger, "grants">, nowMs: number, epoch?: number): Map<string, PoolUse> {
  const use = new Map<string, PoolUse>();
  for (const grant of ledger.grants) {
    const running = holdsConcurrency(grant, nowMs);
    for (const hold of grant.holds) {
      const pool = use.get(hold.pool) ?? { running: 0, ratePermits: 0 };
      if (running) pool.running += hold.c ?? 0;
      if ((hold.r ?? 0) > 0 && nowMs < rateHeldUntil(grant, hold, epoch)) pool.ratePermits += hold.r ?? 0;
      use.set(hold.pool, pool);
    }
  }
  return use;
}

/** A copy's end as a result (or its poison) reports it. */
export interface GrantEnd {
  id: string;
  /** How long before the leader read the report its copy's last item started (undefined: it started none). */
  lastStartAgoMs?: number;
  starts?: number;
  /** Another copy may still run under the grant until it expires: held until its expiry and grace, as if it had. */
  held?: boolean;
}

/**
 * The ledger with the given copies' ends recorded at `nowMs` (their concurrency free at once, their rate permits a
 * window after their last start, which is bounded on the leader's clock without trusting the worker's: it started
 * `lastStartAgoMs` before it sent the report, which was before now), and the grants that hold nothing any more
 * dropped. Ends of grants it does not hold (given back already, or forged) change nothing, but for a grant ended held:
 * a report that is not held comes from the copy that claimed it (only the claimant sends one), so that copy has ended,
 * and its end replaces the held one.
 */
export function recordEnds(ledger: Ledger, ends: readonly GrantEnd[], nowMs: number, epoch: number): Ledger {
  const byId = endsById(ends);
  const grants = ledger.grants.flatMap((grant) => {
    const end = byId.get(grant.id);
    const next =
      end === undefined || !takesEnd(grant, end)
        ? grant
        : end.held === true
          ? { ...grant, ...heldToExpiry(grant, nowMs), held: true as const, endedByEpoch: epoch }
          : {
              ...withoutHeld(grant),
              endedAtMs: nowMs,
              endedByEpoch: epoch,
              ...(end.lastStartAgoMs === undefined ? {} : { lastStartMs: nowMs - Math.max(0, end.lastStartAgoMs) }),
              ...(end.starts === undefined ? {} : { starts: end.starts }),
            };
    return holdsAnything(next, nowMs, epoch) || next.starts !== undefined ? [next] : [];
  });
  return { ...ledger, grants: pruned(grants, nowMs) };
}

/** Each grant's end among `ends`: its claimant's own (not held) when there is one, else the last. */
export function endsById(ends: readonly GrantEnd[]): Map<string, GrantEnd> {
  const byId = new Map<string, GrantEnd>();
  for (const end of ends) if (byId.get(end.id)?.held !== undefined || !byId.has(end.id)) byId.set(end.id, end);
  return byId;
}

/** Whether `end` changes `grant`: it has no end yet, or ended held and `end` is its claimant's own. */
export function takesEnd(grant: Grant, end: GrantEnd): boolean {
  return grant.endedAtMs === undefined || (grant.held === true && end.held !== true);
}

/** The grant without its `held` mark. */
function withoutHeld(grant: Grant): Grant {
  const rest = { ...grant };
  delete rest.held;
  return rest;
}

/** The end of a grant another copy may hold until its expiry: a start at most then, plus the grace. */
function heldToExpiry(grant: Grant, nowMs: number): Pick<Grant, "endedAtMs" | "lastStartMs"> {
  const at = Math.max(nowMs, grant.expiresAtMs + GRANT_GRACE_MS);
  return { endedAtMs: at, lastStartMs: at };
}

/** Ended grants kept only while they hold rate permits, or for one more hour for the status page's starts. */
const ENDED_KEPT_MS = 3_600_000;

/** How long a pool's waiting note is shown after it was last written, in ms. */
const WAITING_SHOWN_MS = 60_000;

/**
 * The ledger with what it no longer needs dropped: waiting notes older than a minute, and the limits of pools no grant
 * or note names. Its size stays bounded by its grants.
 */
export function tidied(ledger: Ledger, nowMs: number): Ledger {
  const waiting = Object.fromEntries(
    Object.entries(ledger.waiting).filter(([, note]) => nowMs - note.atMs < WAITING_SHOWN_MS),
  );
  const named = new Set([
    ...ledger.grants.flatMap((grant) => grant.holds.map((hold) => hold.pool)),
    ...Object.keys(waiting),
  ]);
  const limits = Object.fromEntries(Object.entries(ledger.limits).filter(([pool]) => named.has(pool)));
  return { ...ledger, grants: pruned(ledger.grants, nowMs), waiting, limits };
}

/** What a pool has in use and waiting, as the status page and the metrics show it. */
export interface PoolView {
  pool: string;
  /** Items that may be running (shares held) against the limit. */
  concurrency?: { limit: number; running: number };
  /** Rate permits held against the burst, and the starts reported by units whose last start fell in the last period. */
  rate?: { limit: number; periodSeconds: number; burst: number; permitsInUse: number; reportedStarts: number };
  /** Items of jobs that waited for this pool when the leader last noted it (within the last minute); 0 otherwise. */
  waitingItems: number;
}

/** Each pool the ledger knows, with its use now. */
export function poolViews(ledger: Ledger, nowMs: number): PoolView[] {
  const use = useByPool(ledger, nowMs);
  const pools = new Set([...Object.keys(ledger.limits), ...use.keys()]);
  return [...pools].sort().map((pool) => {
    const limit = ledger.limits[pool];
    const inUse = use.get(pool) ?? { running: 0, ratePermits: 0 };
    const note = ledger.waiting[pool];
    const rate = limit?.rate;
    const reportedStarts =
      rate === undefined
        ? 0
        : ledger.grants
            .filter((grant) => grant.holds.some((hold) => hold.pool === pool))
            .filter((grant) => grant.lastStartMs !== undefined && nowMs - grant.lastStartMs < rate.periodMs)
            .reduce((sum, grant) => sum + (grant.starts ?? 0), 0);
    return {
      pool,
      ...(limit?.concurrency === undefined
        ? {}
        : { concurrency: { limit: limit.concurrency, running: inUse.running } }),
      ...(rate === undefined
        ? {}
        : {
            rate: {
              limit: rate.limit,
              periodSeconds: rate.periodMs / 1000,
              burst: rate.permits,
              permitsInUse: inUse.ratePermits,
              reportedStarts,
            },
          }),
      waitingItems: note !== undefined && nowMs - note.atMs < WAITING_SHOWN_MS ? note.items : 0,
    };
  });
}

function pruned(grants: Grant[], nowMs: number): Grant[] {
  const endedKept = grants
    .filter((grant) => !holdsAnything(grant, nowMs) && nowMs - (grant.endedAtMs ?? grant.expiresAtMs) < ENDED_KEPT_MS)
    .sort((a, b) => (b.endedAtMs ?? b.expiresAtMs) - (a.endedAtMs ?? a.expiresAtMs))
    .slice(0, MAX_ENDED_KEPT);
  const kept = new Set(endedKept);
  return grants.filter((grant) => kept.has(grant) || holdsAnything(grant, nowMs));
}

/**
 * The grants of `jobId` that expired without their copy reporting (`expiresAtMs + GRANT_GRACE_MS` passed): their
 * units' fate is unknown — never sent, or held by a process that died — so they are sent again with a new grant.
 */
export function expiredUnreported(ledger: Pick<Ledger, "grants">, jobId: string, nowMs: number): Grant[] {
  const newest = new Map<number, number>();
  for (const grant of ledger.grants)
    if (grant.jobId === jobId) newest.set(grant.first, Math.max(newest.get(grant.first) ?? 0, grant.grantedAtMs));
  // A unit granted again since (after a regrant) needs nothing more: only its newest grant speaks for it.
  return ledger.grants.filter(
    (grant) =>
      grant.jobId === jobId &&
      grant.endedAtMs === undefined &&
      nowMs >= grant.expiresAtMs + GRANT_GRACE_MS &&
      grant.grantedAtMs >= (newest.get(grant.first) ?? 0),
  );
}

/** The ledger with expired grants marked ended at their expiry (a start at most at the expiry, plus the grace). */
export function markExpired(ledger: Ledger, ids: ReadonlySet<string>, nowMs: number, epoch: number): Ledger {
  const grants = ledger.grants.map((grant) =>
    ids.has(grant.id) && grant.endedAtMs === undefined
      ? { ...grant, ...heldToExpiry(grant, 0), endedByEpoch: epoch }
      : grant,
  );
  return { ...ledger, grants: pruned(grants, nowMs) };
}

/**
 * Whether another grant than `except` of the same unit is still out with no end known (its unit was sent again under
 * it, so a regrant need not send it again). A grant that ended held — its copy gave it back, and an earlier one may
 * still run under it — does not count: it will never report the unit.
 */
export function unitHasLiveGrant(
  ledger: Pick<Ledger, "grants">,
  unit: { jobId: string; first: number },
  except: string,
  nowMs: number,
): boolean {
  return ledger.grants.some(
    (grant) =>
      grant.id !== except &&
      grant.jobId === unit.jobId &&
      grant.first === unit.first &&
      grant.endedAtMs === undefined &&
      holdsConcurrency(grant, nowMs),
  );
}

/** Each pool the stored ledger knows, with its use at `nowMs` (none without a ledger): read without the lease. */
export async function readPoolViews(state: StateStore, nowMs: number, options: Abortable = {}): Promise<PoolView[]> {
  const stored = await state.read(LEDGER_KEY, options);
  return stored === undefined ? [] : poolViews(ledgerSchema.parse(stored.value), nowMs);
}

/** How many times a ledger write that lost a race is retried on a fresh read. */
const LEDGER_WRITE_RETRIES = 3;

/**
 * Reads and writes of the grant ledger through the fenced store, for one step: it remembers the version it last read
 * or wrote, as the job store does for jobs (every write of the ledger is the leader's, conditional on the version it
 * read, so a version written by anyone else makes the next write fail and re-read).
 */
export class LedgerStore {
  private latest: Versioned<Ledger> | undefined;
  private known = false;

  constructor(private readonly fenced: FencedStateStore) {}

  /** The ledger as last read or written; read from storage when it has not been (an empty one when there is none). */
  async read(options: Abortable = {}): Promise<Ledger> {
    if (!this.known) await this.fetch(options);
    return this.latest?.value ?? emptyLedger();
  }

  /**
   * Read-modify-write: `change` gets the ledger and returns the next one, or undefined to leave it; retried on a fresh
   * read after a lost race (so `change` must be pure). Returns the ledger as it is now. @throws StaleEpochError when a
   * newer epoch wrote it (this leader must stop); ConcurrentUpdateError when every attempt lost.
   */
  async update(change: (ledger: Ledger) => Ledger | undefined, options: Abortable = {}): Promise<Ledger> {
    for (let retry = 0; ; retry++) {
      const current = await this.read(options);
      const next = change(current);
      if (next === undefined) return current;
      const previous = this.latest;
      this.known = false; // until the write lands: a failed one leaves the next reader to read
      try {
        this.latest = await this.fenced.write(LEDGER_KEY, next, previous, options);
        this.known = true;
        return next;
      } catch (error) {
        if (!(error instanceof ConcurrentUpdateError) || retry >= LEDGER_WRITE_RETRIES) throw error;
      }
    }
  }

  private async fetch(options: Abortable): Promise<void> {
    this.latest = await this.fenced.read(LEDGER_KEY, (value) => ledgerSchema.parse(value), options);
    this.known = true;
  }
}
