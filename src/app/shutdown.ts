import { setMaxListeners } from "node:events";
import { AbortError } from "../library/errors.js";
import { delay, type Abortable } from "../library/util/delay.js";

/**
 * Options for {@link ProcessShutdown.shutdown}; `abortSignal` stops waiting early (the signal has fired by then either
 * way).
 */
export interface ShutdownOptions extends Abortable {
  /** How long to wait for tracked work to settle after the signal fired, in ms. @default 10000 */
  timeoutMs?: number;
}

/**
 * Graceful shutdown of one process: a signal that fires when the host is about to end the process (deploys,
 * scale-in; the Functions `appTerminate` hook), and the work to wait for before it may exit. Pass {@link signal} as
 * the `abortSignal` of each tick: a leader then ends its term with reason "shutdown" and releases its lease at once,
 * instead of leaving it to expire (a lease duration) while the next leader waits.
 */
export class ProcessShutdown {
  private readonly controller = new AbortController();
  private readonly running = new Set<Promise<unknown>>();

  constructor() {
    // Every tick of the process listens on this one signal while it runs.
    setMaxListeners(1000, this.controller.signal);
  }

  /** Fires (with an {@link AbortError}) when shutdown begins. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Whether shutdown has begun. */
  get requested(): boolean {
    return this.controller.signal.aborted;
  }

  /** Runs `work` and keeps track of it until it settles, so {@link shutdown} can wait for it. */
  track<T>(work: () => Promise<T>): Promise<T> {
    const promise = work();
    const settled = promise.then(
      () => undefined,
      () => undefined,
    );
    this.running.add(settled);
    void settled.then(() => this.running.delete(settled));
    return promise;
  }

  /**
   * Fires {@link signal} and waits until every tracked piece of work has settled (a leader has released its lease),
   * at most `timeoutMs`. Returns false when some were still running at the deadline; a lease not released by then
   * expires by itself. Calling it again fires nothing new and waits again.
   */
  async shutdown(options: ShutdownOptions = {}): Promise<boolean> {
    const timeoutMs = options.timeoutMs ?? 10_000;
    if (!this.requested)
      this.controller.abort(new AbortError("The app is shutting down; running work stops and leases are released."));
    const stopWaiting = new AbortController();
    const onAbort = (): void => {
      stopWaiting.abort();
    };
    if (options.abortSignal?.aborted) onAbort();
    options.abortSignal?.addEventListener("abort", onAbort, { once: true });
    const deadline = delay(timeoutMs, { abortSignal: stopWaiting.signal }).then(
      () => false,
      () => false,
    );
    try {
      return await Promise.race([Promise.all([...this.running]).then(() => true), deadline]);
    } finally {
      options.abortSignal?.removeEventListener("abort", onAbort);
      stopWaiting.abort();
    }
  }
}

/** The process-wide shutdown: the `appTerminate` hook fires it, the coordinator's ticks run under it. */
export const processShutdown = new ProcessShutdown();
