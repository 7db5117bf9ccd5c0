/**
 * How long the event loop was held while a worker's item ran: a timer notes each turn of the loop (every
 * {@link LOOP_TICK_MS} while any item runs), and an item's hold is the longest stretch, within the item, between two
 * turns — or from the last turn to the item's end, when it ends still holding the thread. An item that awaits I/O lets
 * the timer run, so only synchronous work counts. The timer runs only while items do and never keeps the process
 * alive.
 */

/** How often the loop's turns are noted while items run, in ms: the measure's resolution. */
export const LOOP_TICK_MS = 50;

/** One item's measure, from {@link LoopHoldWatch.begin} to {@link LoopHoldWatch.end}. */
export interface HoldWindow {
  readonly startMs: number;
  longestMs: number;
}

/** Notes the event loop's turns for the items running in this process (one watch a process). */
export class LoopHoldWatch {
  private lastTurnMs: number;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly open = new Set<HoldWindow>();

  constructor(private readonly monotonicMs: () => number = () => performance.now()) {
    this.lastTurnMs = monotonicMs();
  }

  /** Starts measuring an item. */
  begin(): HoldWindow {
    const window: HoldWindow = { startMs: this.monotonicMs(), longestMs: 0 };
    this.open.add(window);
    if (this.timer === undefined) {
      this.lastTurnMs = window.startMs;
      this.timer = setInterval(() => this.turned(), LOOP_TICK_MS);
      this.timer.unref();
    }
    return window;
  }

  /** Ends an item's measure: the longest the loop did not turn while it ran, in ms. */
  end(window: HoldWindow): number {
    this.open.delete(window);
    if (this.open.size === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
    return Math.max(window.longestMs, this.monotonicMs() - Math.max(this.lastTurnMs, window.startMs));
  }

  private turned(): void {
    const now = this.monotonicMs();
    for (const window of this.open)
      window.longestMs = Math.max(window.longestMs, now - Math.max(this.lastTurnMs, window.startMs));
    this.lastTurnMs = now;
  }
}
