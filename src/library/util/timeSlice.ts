import { setImmediate as nextTurn } from "node:timers/promises";

/** A time slice: await it between steps; {@link TimeSlice.spent} says, synchronously, whether awaiting would wait. */
export interface TimeSlice {
  (): Promise<void>;
  /**
   * Whether the slice is spent: check it in the same synchronous run as the step it guards
   * (`while (slice.spent()) await slice();` then the step, with no await between). Loops whose awaits resolve in one
   * turn would otherwise all pass the check before any of them has run its step, then run their steps back to back.
   */
  spent(): boolean;
}

/**
 * A cooperative time slice for loops of CPU-bound steps, shared by every loop that calls the function it returns:
 * the function resolves at once until `sliceMs` has passed since the slice began; after that, every caller waits for
 * the event loop's next turn (timers and I/O run meanwhile), where a new slice begins. So however many loops share
 * it, the thread is held for about one slice (plus the step each loop is in) before the process's timers run. Await
 * it between steps; a single step longer than the slice still runs whole.
 */
export function timeSlicer(sliceMs: number, monotonicMs: () => number = () => performance.now()): TimeSlice {
  let startedMs = monotonicMs();
  let turn: Promise<void> | undefined;
  const spent = (): boolean => monotonicMs() - startedMs >= sliceMs;
  const slice = async (): Promise<void> => {
    while (spent()) {
      turn ??= nextTurn().then(() => {
        startedMs = monotonicMs();
        turn = undefined;
      });
      await turn;
    }
  };
  return Object.assign(slice, { spent });
}
