import type { Scheduler } from "fast-check";
import { StorageError } from "../../src/library/errors";
import { abortReason } from "../../src/library/util/delay";
import type { Clock } from "../../src/library/util/clock";

/**
 * One OS process of an instance, as the network sees it. A frozen process sends nothing and hears nothing, and its
 * clock stops (it resumes believing no time passed: a stale leader). A crashed process never hears an answer again;
 * requests it had sent may still land. `outage` makes its requests fail ("refuse") or go unanswered while it lasts
 * ("hang"); `latencyMs` makes each request take up to that long on the wire. `clockRate`: how fast its monotonic
 * clock runs against the simulation's (1: exactly; 1.04: 4 % fast) — the drift takeover's clock assumption bounds. At
 * least 1: the processes' timers run on the simulation's clock, and one whose clock ran slow would wake before its own
 * deadline over and over (only the ratio of two processes' rates matters to takeover).
 */
export class SimProcess {
  crashed = false;
  clockRate = 1;
  frozenSinceMs: number | undefined;
  frozenTotalMs = 0;
  outage: "none" | "refuse" | "hang" = "none";
  latencyMs = 0;
  /** Every request of the process takes this long on the wire, faults or not (storage's own latency). */
  baseLatencyMs = 0;
  /** A fault that strikes when this process's `count`-th next request is about to land (so: at any await). */
  armed: { count: number; fire: () => void } | undefined;
  private readonly waiters: (() => void)[] = [];

  private readonly bornMs: number;

  constructor(
    readonly name: string,
    private readonly now: () => number,
  ) {
    this.bornMs = now();
  }

  /**
   * The process's own clocks: they stop while the process is frozen (a VM paused: it resumes believing no time
   * passed). The monotonic one runs at `clockRate` from the process's start, in whole ms: the fake timers drop a
   * fraction of a ms, so a wait of 0.4 ms would fire at once, again and again, with the clock standing still.
   */
  readonly clock: Clock = {
    monotonicMs: () => Math.floor(this.bornMs + this.clockRate * (this.clock.wallMs() - this.bornMs)),
    wallMs: () => (this.frozenSinceMs ?? this.now()) - this.frozenTotalMs,
  };

  get frozen(): boolean {
    return this.frozenSinceMs !== undefined;
  }

  freeze(): void {
    if (!this.crashed && this.frozenSinceMs === undefined) this.frozenSinceMs = this.now();
  }

  unfreeze(): void {
    if (this.frozenSinceMs === undefined) return;
    this.frozenTotalMs += this.now() - this.frozenSinceMs;
    this.frozenSinceMs = undefined;
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  crash(): void {
    this.crashed = true;
    this.waiters.length = 0;
  }

  /** Runs `fn` now, or once the process is no longer frozen; never after a crash. */
  whenAwake(fn: () => void): void {
    if (this.crashed) return;
    if (this.frozenSinceMs === undefined) fn();
    else this.waiters.push(fn);
  }

  awake(): Promise<void> {
    return new Promise((resolve) => {
      this.whenAwake(resolve);
    });
  }
}

/** A promise that never settles (a crashed process waits for ever). */
export const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

/** A request's outcome on the server. */
type Landed<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * Carries requests from processes to the storage account. Every request lands at a moment fast-check's scheduler
 * picks among all requests in flight, so any interleaving of concurrent requests (and any reordering of their
 * answers) can happen; the scheduler's report is the interleaving a failure shrinks to.
 */
export class Network {
  requests = 0;
  /** Actions waiting for the `count`-th next request of any process to land (e.g. a thaw in the middle of a step). */
  private readonly triggers: { count: number; fire: () => void }[] = [];
  /** Global time at which the run started, for the times in the labels. */
  startMs = 0;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly random: () => number,
  ) {}

  /**
   * Sends one request of `process`; `effect` runs atomically when it lands. Aborting the caller's signal answers at
   * once with the signal's reason, but a request already sent may still land (an unknown outcome).
   */
  call<T>(process: SimProcess, label: string, effect: () => T, signal?: AbortSignal): Promise<T> {
    if (process.crashed) return never();
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<T>((resolve, reject) => {
      let answered = false;
      let landed = false;
      let dropIfNotLanded = false;
      const answer = (settle: () => void): void => {
        process.whenAwake(() => {
          if (answered) return;
          answered = true;
          signal?.removeEventListener("abort", onAbort);
          settle();
        });
      };
      const onAbort = (): void => {
        if (!landed) dropIfNotLanded = this.random() < 0.5; // lost on the wire, or lands later
        answer(() => {
          reject(abortReason(signal));
        });
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      void this.deliver(process, label, effect, () => dropIfNotLanded).then((outcome) => {
        landed = true;
        answer(() => {
          if (outcome.ok) resolve(outcome.value);
          else reject(outcome.error instanceof Error ? outcome.error : new Error(String(outcome.error)));
        });
      });
    });
  }

  /** Runs `fire` when the `count`-th next request of any process lands: between two requests of someone's step. */
  atRequest(count: number, fire: () => void): void {
    this.triggers.push({ count, fire });
  }

  private fireTriggers(): void {
    for (const trigger of [...this.triggers]) {
      if (--trigger.count > 0) continue;
      this.triggers.splice(this.triggers.indexOf(trigger), 1);
      trigger.fire();
    }
  }

  private async deliver<T>(
    process: SimProcess,
    label: string,
    effect: () => T,
    dropped: () => boolean,
  ): Promise<Landed<T>> {
    await process.awake(); // a frozen process sends nothing
    while (process.outage === "hang") await sleep(250); // no answer until storage is back (callers time out)
    if (process.outage === "refuse")
      return {
        ok: false,
        error: new StorageError("StorageUnavailable", undefined, `${label}: connect ECONNREFUSED (simulated outage)`),
      };
    if (process.baseLatencyMs > 0) await sleep(process.baseLatencyMs);
    if (process.latencyMs > 0) await sleep(Math.round(this.random() * process.latencyMs));
    const tag = `${((Date.now() - this.startMs) / 1000).toFixed(3)} s ${process.name} ${label}`;
    await this.scheduler.schedule(Promise.resolve(), tag);
    const armed = process.armed;
    if (armed !== undefined && --armed.count <= 0) {
      process.armed = undefined;
      armed.fire(); // freezes or crashes the process with this request on its way
    }
    if (process.crashed && this.random() < 0.5) return never(); // died before it left
    if (process.frozen) {
      await process.awake(); // it leaves when the process thaws, in any order with the others
      await this.scheduler.schedule(Promise.resolve(), `${tag} (sent after the thaw)`);
    }
    if (dropped()) return never();
    this.requests++;
    this.fireTriggers();
    try {
      return { ok: true, value: effect() };
    } catch (error) {
      return { ok: false, error };
    }
  }
}

/** A wait on the simulation's global clock (the fake timers). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Sleeps `ms` on the process's clock, or rejects with the signal's reason as soon as it fires. */
export function pause(ms: number, abortSignal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (abortSignal.aborted) {
      reject(abortSignal.reason as Error);
      return;
    }
    const stop = (): void => {
      clearTimeout(timer);
      reject(abortSignal.reason as Error);
    };
    const timer = setTimeout(() => {
      abortSignal.removeEventListener("abort", stop);
      resolve();
    }, ms);
    abortSignal.addEventListener("abort", stop, { once: true });
  });
}
