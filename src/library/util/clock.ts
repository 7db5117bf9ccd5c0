/**
 * Time sources. Deadlines use the monotonic clock (`performance.now()`), which never jumps with wall-clock changes;
 * event timestamps use the wall clock. Tests substitute both with vitest's fake timers.
 */
export interface Clock {
  /** Monotonic milliseconds, for deadlines and elapsed times. */
  monotonicMs(): number;
  /** Wall-clock milliseconds since the epoch, for timestamps people read. */
  wallMs(): number;
}

/** The process clock. */
export const systemClock: Clock = {
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
};
