import type { LeaderWatch as Watched } from "../../library/leadership/LeaderElector.js";
import { delay, withJitter, type Abortable } from "../../library/util/delay.js";
import type { MessageQueue } from "../ports/ports.js";
import { sendWakeUp } from "./wake.js";

/**
 * Watching the leader from processes that are busy anyway. Between timer ticks nobody runs inside a Functions app: a
 * leader that dies mid-job leaves its lease held, and with takeover on nobody notices it fell silent unless someone
 * reads the lease. So while this process has had worker or wake-up invocations recently (a job is active), it reads
 * the lease once per interval through the elector — each read counts towards knowing that the holder has stopped, by
 * the holder's own takeover deadline — and once the elector knows, it breaks the holder's lease (conditional on the
 * record it counted, so a holder that heartbeat meanwhile is never broken) and sends one wake-up (`leader-silent`):
 * the `wake` function then starts a step through the same code path as every wake-up, an ordinary attempt that finds
 * the lease free. The watcher never acquires and never runs a step itself, so the elector still runs at most one term
 * at a time, and a step always runs inside an invocation (its logs and events go where every step's go).
 *
 * Cost: one lease read per interval per busy process, for `windowMs` after its last invocation; nothing when idle.
 */

/** The part of the elector a watcher uses. */
export interface WatchedElector {
  /** Whether the elector has an attempt or a term in progress (then there is nothing to watch). */
  readonly busy: boolean;
  watchLeader(options: Abortable): Promise<Watched>;
}

/** Options of {@link LeaderWatch}. */
export interface LeaderWatchOptions {
  /** How often to read the lease while watching, in ms; 0 turns the watcher off. */
  intervalMs: number;
  /** How long after this process's last invocation it keeps watching, in ms. */
  windowMs: number;
  /** This instance's id, for the wake-up's `from`. */
  from: string;
  /** Stops the watcher for good (the process's shutdown). */
  abortSignal?: AbortSignal;
  /** Monotonic ms. @default performance.now */
  monotonicMs?: () => number;
  /** Random source for the interval's jitter (±10 %), [0, 1). @default Math.random */
  random?: () => number;
  /**
   * What to do once the watcher broke a silent holder's lease. @default one wake-up (`leader-silent`) on the wake
   * queue; a failure to send it is ignored (the lease is free: the next tick or wake-up acquires it)
   */
  afterBreak?: () => Promise<void>;
}

/** What a watcher did, for tests and benchmarks. */
export interface LeaderWatchStats {
  /** Lease reads (each `watchLeader` that read). */
  reads: number;
  /** Breaks of a silent holder's lease. */
  breaks: number;
  /** Wake-ups sent after a break. */
  wakeUps: number;
}

/** One watcher per process (see the module comment). */
export class LeaderWatch {
  readonly stats: LeaderWatchStats = { reads: 0, breaks: 0, wakeUps: 0 };
  private lastActivityMono = Number.NEGATIVE_INFINITY;
  /** When this watcher's latest read found a live holder (see {@link sawLiveLeader}); -∞ after any other answer. */
  private liveSeenMono = Number.NEGATIVE_INFINITY;
  /** That holder's term, as its record said: when it began (wall clock), for {@link liveLeaderSince}. */
  private liveSinceMs: number | undefined;
  private loop: Promise<void> | undefined;
  private readonly stopped = new AbortController();

  constructor(
    private readonly elector: WatchedElector,
    private readonly wakeQueue: MessageQueue,
    private readonly options: LeaderWatchOptions,
  ) {
    options.abortSignal?.addEventListener("abort", () => this.stopped.abort(), { once: true });
  }

  /** Whether this watcher is on (an interval above 0): worker and wake-up invocations make it watch. */
  get enabled(): boolean {
    return this.options.intervalMs > 0;
  }

  /** Whether the watcher is reading the lease now (or between two reads). */
  get watching(): boolean {
    return this.loop !== undefined;
  }

  /**
   * Called by each worker and wake-up invocation: this process is busy, a job is likely active. Starts watching, or
   * keeps watching for another `windowMs`.
   */
  activity(): void {
    if (this.options.intervalMs <= 0 || this.stopped.signal.aborted) return;
    this.lastActivityMono = this.now();
    this.loop ??= this.watch().finally(() => {
      this.loop = undefined;
    });
  }

  /**
   * Whether this watcher's latest read, at most `withinMs` ago, found the lease held by a holder that heartbeats and
   * had not fallen silent (this process could take over from it if it stopped: `breakInMs` above 0). Such a holder is
   * in its step; a worker of this process need not wake the coordinator for its results (`handleWorkMessage`).
   */
  sawLiveLeader(withinMs: number): boolean {
    return this.now() - this.liveSeenMono <= withinMs;
  }

  /**
   * When the term of the live holder this watcher's latest read found (as {@link sawLiveLeader}) began, by its record
   * (wall-clock ms); undefined when that read is older than `withinMs` or found none. A step runs one term, so the
   * holder's step ends within its budget of this.
   */
  liveLeaderSince(withinMs: number): number | undefined {
    return this.sawLiveLeader(withinMs) ? this.liveSinceMs : undefined;
  }

  /** Stops watching and waits for a read in flight. */
  async stop(): Promise<void> {
    this.stopped.abort();
    await this.loop;
  }

  private now(): number {
    return (this.options.monotonicMs ?? (() => performance.now()))();
  }

  private async watch(): Promise<void> {
    const { intervalMs, windowMs } = this.options;
    const abortSignal = this.stopped.signal;
    while (!abortSignal.aborted && this.now() - this.lastActivityMono < windowMs) {
      let waitMs = intervalMs;
      if (!this.elector.busy) {
        try {
          const seen = await this.elector.watchLeader({ abortSignal });
          this.stats.reads++;
          const live = seen.outcome === "held" && seen.breakInMs !== undefined && seen.breakInMs > 0;
          this.liveSeenMono = live ? this.now() : Number.NEGATIVE_INFINITY;
          this.liveSinceMs = seen.outcome === "held" ? seen.leader.sinceMs : undefined;
          if (seen.outcome === "broken") await this.broke();
          // A holder that may be broken sooner than the next read is read again right then.
          if (seen.outcome === "held" && seen.breakInMs !== undefined) waitMs = Math.min(waitMs, seen.breakInMs + 1);
        } catch {
          this.liveSeenMono = Number.NEGATIVE_INFINITY;
          // Storage trouble or shutdown: read again next interval (the loop ends on shutdown).
        }
      }
      try {
        await delay(Math.ceil(withJitter(waitMs, 0.1, this.options.random)), { abortSignal });
      } catch {
        return;
      }
    }
  }

  private async broke(): Promise<void> {
    this.stats.breaks++;
    const afterBreak =
      this.options.afterBreak ??
      (() =>
        sendWakeUp(
          this.wakeQueue,
          { reason: "leader-silent", from: this.options.from },
          {
            abortSignal: this.stopped.signal,
          },
        ));
    try {
      await afterBreak();
      this.stats.wakeUps++;
    } catch {
      // The lease is free: the next timer tick or wake-up acquires it.
    }
  }
}
