import { GRANT_LIFETIME_MS, MAX_LOST_DELIVERIES } from "../../src/coordination/flow/grant";
import { GRANT_GRACE_MS } from "../../src/coordination/state/grantLedger";
import type { JobState } from "../../src/coordination/state/jobState";
import { simLimitKey, type LimitsPlan, type SimKindLimits, type SimPoolLimits } from "./limits";
import type { SimProcess } from "./network";
import type { SimWorld, SubmittedJob } from "./world";

/**
 * Issue 42's model in the world (`limits.ts`): every item that starts under a limit is recorded — its start and end
 * on the simulated clock, its job, key and pools, the process that ran it — and each start is checked at once against
 * every pool it counts against: no more items running than the pool's concurrency, and no more starts in any window
 * of the period (sliding: every window ending at a start, so every window) than its rate's limit, nor more than its
 * burst in any window of `periodSeconds ÷ ⌊limit ÷ burst⌋`. An item runs from the kind's call until it returns or
 * throws — or its process dies; an item of a frozen process ends no earlier than its thaw (a paused process finishes
 * nothing, and holds what it was calling).
 */

/** One pool an item counts against, with its limits. */
export interface SimPool {
  id: string;
  concurrency?: number;
  rate?: { limit: number; periodMs: number; burst: number; windowMs: number };
}

/** One item's run under limits. */
export interface ItemInterval {
  jobId: string;
  index: number;
  key: string | undefined;
  pools: SimPool[];
  process: SimProcess;
  startMs: number;
  endMs: number | undefined;
}

/** A job's items still open (neither done nor failed) from a moment on, as its stored state showed them. */
interface OpenAt {
  atMs: number;
  open: number;
}

/** What the limits model measured of a run: how long pools sat below their concurrency while items waited. */
export interface UndershootStats {
  /** Pools with a concurrency limit whose jobs' items waited at some time. */
  pools: number;
  /** Summed over those pools: time some item of theirs waited (its job running, the item open and not running). */
  waitingMs: number;
  /** …of which the pool ran fewer items than its concurrency limit. */
  belowMs: number;
  /** …of which it ran none. */
  idleMs: number;
  /** The longest single stretch a pool ran none while items waited. */
  longestIdleMs: number;
}

/** A simulated kind's limits in the plan, by its name. */
function kindLimitsOf(kinds: LimitsPlan["kinds"], name: string): SimKindLimits | null {
  return name === "sim-sum" ? kinds["sim-sum"] : name === "group-by" ? kinds["group-by"] : null;
}

function normalized(id: string, limits: SimPoolLimits): SimPool {
  const pool: SimPool = { id };
  if (limits.concurrency !== undefined) pool.concurrency = limits.concurrency;
  if (limits.rate !== undefined) {
    const { limit, periodSeconds } = limits.rate;
    const burst = limits.rate.burst ?? limit;
    const periodMs = periodSeconds * 1000;
    pool.rate = { limit, periodMs, burst, windowMs: periodMs / Math.floor(limit / burst) };
  }
  return pool;
}

export class SimLimits {
  readonly intervals: ItemInterval[] = [];
  /** Problems found at starts, not yet reported. */
  readonly problems: string[] = [];
  private readonly open = new Map<string, OpenAt[]>();
  private readonly jobEnds = new Map<string, number>();

  constructor(private readonly world: SimWorld) {}

  /** Whether the plan has any limit at all. */
  get on(): boolean {
    const { kinds, jobs } = this.world.plan.limits;
    return kinds["sim-sum"] !== null || kinds["group-by"] !== null || jobs.some((job) => job !== null);
  }

  /** The pools an item of `job` counts against (none: the job is not limited). */
  poolsOf(job: SubmittedJob, index: number): { pools: SimPool[]; key: string | undefined } {
    const { limits, jobs } = this.world.plan;
    const pools: SimPool[] = [];
    const kind = kindLimitsOf(limits.kinds, job.plan.kind);
    const { perKey, ...kindPool } = kind ?? {};
    if (kindPool.concurrency !== undefined || kindPool.rate !== undefined)
      pools.push(normalized(`k:${job.plan.kind}`, kindPool));
    const own = jobs.includes(job.plan) ? limits.jobs[jobs.indexOf(job.plan)] : undefined;
    if (own !== undefined && own !== null) pools.push(normalized(`j:${job.id}`, own));
    let key: string | undefined;
    if (perKey !== undefined) {
      const item = job.plan.items[index];
      const stored =
        item?.t === "blob" || item?.t === "missingBlob"
          ? { text: undefined, blob: "blob" }
          : { text: job.inputs[index], blob: undefined };
      key = simLimitKey(stored);
      pools.push(normalized(`k:${job.plan.kind}/${key}`, perKey));
    }
    return { pools, key };
  }

  /** Whether a job's items count against any limit. */
  limited(job: SubmittedJob): boolean {
    return this.poolsOf(job, 0).pools.length > 0;
  }

  /** An item starts on `process` (the kind was called): recorded and checked. Undefined for an unlimited item. */
  onStart(process: SimProcess, jobId: string, index: number): ItemInterval | undefined {
    // A dead process starts nothing: the simulator cannot stop its code, which runs on after the crash (its requests
    // are dropped), but nothing it calls then reaches the world.
    if (process.crashed) return undefined;
    const job = this.world.jobs.find((submitted) => submitted.id === jobId);
    if (job === undefined) return undefined;
    const { pools, key } = this.poolsOf(job, index);
    if (pools.length === 0) return undefined;
    const interval: ItemInterval = { jobId, index, key, pools, process, startMs: Date.now(), endMs: undefined };
    this.intervals.push(interval);
    for (const pool of pools) this.check(pool, interval);
    return interval;
  }

  /** The item returned or threw. */
  onEnd(interval: ItemInterval): void {
    interval.endMs ??= Date.now();
  }

  /** A process died: its items stop running. */
  onCrash(process: SimProcess): void {
    for (const interval of this.intervals)
      if (interval.process === process && interval.endMs === undefined) interval.endMs = Date.now();
  }

  private t(ms: number): string {
    return `${((ms - this.world.startMs) / 1000).toFixed(3)} s`;
  }

  private describe(interval: ItemInterval): string {
    const end = interval.endMs === undefined ? "running" : `to ${this.t(interval.endMs)}`;
    return `job ${interval.jobId.slice(0, 8)} item ${interval.index} on ${interval.process.name} (${this.t(interval.startMs)} ${end})`;
  }

  private check(pool: SimPool, started: ItemInterval): void {
    const now = started.startMs;
    const inPool = this.intervals.filter((interval) => interval.pools.some((p) => p.id === pool.id));
    if (pool.concurrency !== undefined) {
      const running = inPool.filter((interval) => interval.startMs <= now && (interval.endMs ?? Infinity) > now);
      if (running.length > pool.concurrency)
        this.problems.push(
          `pool ${pool.id} (concurrency ${pool.concurrency}) had ${running.length} items running at ${this.t(now)}: ${running.map((i) => this.describe(i)).join("; ")}`,
        );
    }
    if (pool.rate !== undefined) {
      const { limit, periodMs, burst, windowMs } = pool.rate;
      const windows: [number, number, string][] = [[limit, periodMs, `rate ${limit} per ${periodMs / 1000} s`]];
      if (burst < limit) windows.push([burst, windowMs, `burst ${burst} per ${Math.round(windowMs)} ms`]);
      for (const [most, lengthMs, what] of windows) {
        // Every window of `lengthMs` that holds this start ends at or after it; the one ending here holds the most
        // starts before it (later starts are checked when they come).
        const inWindow = inPool.filter((interval) => interval.startMs > now - lengthMs && interval.startMs <= now);
        if (inWindow.length > most)
          this.problems.push(
            `pool ${pool.id} (${what}) had ${inWindow.length} starts in the window (${this.t(now - lengthMs)}, ${this.t(now)}]: ${inWindow.map((i) => this.describe(i)).join("; ")}`,
          );
      }
    }
  }

  /** A job's stored state as the invariants read it (for the undershoot's open items). */
  onJobState(job: SubmittedJob, state: JobState): void {
    if (!this.limited(job)) return;
    const now = Date.now();
    const ended = state.status !== "running";
    if (ended && !this.jobEnds.has(job.id)) this.jobEnds.set(job.id, now);
    const open = ended ? 0 : state.itemCount - state.doneCount - state.failedCount;
    const timeline = this.open.get(job.id) ?? [];
    if (timeline.at(-1)?.open !== open) timeline.push({ atMs: now, open });
    this.open.set(job.id, timeline);
  }

  /**
   * How long after faults stop a limited job may take to end: a grant whose unit never went out (its leader died
   * between its writes and its send) holds its shares for a grant's lifetime and grace before the unit is sent again,
   * and then the job's items run one after another at worst, each a unit's time or a rate window. A unit whose copy
   * could not claim its grant (storage trouble) goes back held: its grant's shares stay held for the grant's lifetime
   * and grace (another copy may run under it), once more. An item that kills its process does so on every delivery:
   * a later delivery finds the claim of the one that died unmarked and gives the unit back held (that one may be
   * frozen, not dead), so each such unit holds its shares a grant's lifetime and grace per lost delivery, until
   * {@link MAX_LOST_DELIVERIES} fail it. A worker's result damaged on its way (`garbageResults`) names no grant the
   * leader can read: the unit's grant holds its shares until it expires and its grace passes, once per damaged result.
   */
  calmLimitMs(baseMs: number, tickMs: number): number {
    if (!this.on) return baseMs;
    let workMs = 0;
    let kills = 0;
    for (const job of this.world.plan.jobs) {
      kills += job.items.filter((item) => item.t === "kill").length;
      const unitMs = this.world.plan.lifecycle.unitMs;
      for (let index = 0; index < job.items.length; index++) {
        const pools = this.poolsOf({ id: "", plan: job, inputs: [], params: undefined }, index).pools;
        workMs += Math.max(
          0,
          ...pools.map((pool) =>
            Math.max(unitMs / (pool.concurrency ?? Infinity), pool.rate === undefined ? 0 : pool.rate.windowMs),
          ),
        );
      }
    }
    const burstJobs = this.world.plan.activity.burst?.jobs ?? 0;
    const sum = kindLimitsOf(this.world.plan.limits.kinds, "sim-sum");
    if (sum !== null) workMs += burstJobs * Math.max(2000 / (sum.concurrency ?? Infinity), sum.rate ? 3000 : 0);
    const grantMs = GRANT_LIFETIME_MS + GRANT_GRACE_MS;
    const damaged = this.world.plan.garbage.damaged.length;
    return baseMs + (2 + kills * MAX_LOST_DELIVERIES + damaged) * grantMs + 2 * tickMs + 2 * workMs;
  }

  /** When a limited job was first seen ended (undefined: not seen). */
  endedAt(jobId: string): number | undefined {
    return this.jobEnds.get(jobId);
  }

  /** The run's undershoot, from the recorded intervals and the jobs' open items over time. */
  undershoot(endMs: number): UndershootStats {
    const stats: UndershootStats = { pools: 0, waitingMs: 0, belowMs: 0, idleMs: 0, longestIdleMs: 0 };
    const pools = new Map<string, { pool: SimPool; jobs: Set<string> }>();
    for (const job of this.world.jobs)
      for (const pool of this.poolsOf(job, 0).pools) {
        // Key pools: which items wait on a key is not tracked; kind and job pools count every item of their jobs.
        if (pool.concurrency === undefined || pool.id.includes("/")) continue;
        const entry = pools.get(pool.id) ?? { pool, jobs: new Set<string>() };
        entry.jobs.add(job.id);
        pools.set(pool.id, entry);
      }
    for (const { pool, jobs } of pools.values()) {
      const intervals = this.intervals.filter((interval) => interval.pools.some((p) => p.id === pool.id));
      const times = new Set<number>([endMs]);
      for (const interval of intervals) {
        times.add(interval.startMs);
        if (interval.endMs !== undefined) times.add(interval.endMs);
      }
      for (const id of jobs) for (const point of this.open.get(id) ?? []) times.add(point.atMs);
      const sorted = [...times].filter((ms) => ms <= endMs).sort((a, b) => a - b);
      let waited = false;
      let idleSince: number | undefined;
      for (let i = 0; i + 1 < sorted.length; i++) {
        const from = sorted[i] ?? 0;
        const to = sorted[i + 1] ?? from;
        const running = intervals.filter((iv) => iv.startMs <= from && (iv.endMs ?? Infinity) > from);
        let waiting = 0;
        for (const id of jobs) {
          const open = [...(this.open.get(id) ?? [])].reverse().find((point) => point.atMs <= from)?.open ?? 0;
          waiting += Math.max(0, open - running.filter((iv) => iv.jobId === id).length);
        }
        if (waiting === 0) {
          idleSince = undefined;
          continue;
        }
        waited = true;
        stats.waitingMs += to - from;
        if (running.length < (pool.concurrency ?? Infinity)) stats.belowMs += to - from;
        if (running.length === 0) {
          stats.idleMs += to - from;
          idleSince ??= from;
          stats.longestIdleMs = Math.max(stats.longestIdleMs, to - idleSince);
        } else idleSince = undefined;
      }
      if (waited) stats.pools++;
    }
    return stats;
  }
}
