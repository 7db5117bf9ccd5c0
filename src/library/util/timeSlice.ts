import { setImmediate as nextTurn } from "node:timers/promises";

/**
 * A cooperative time slice for loops of CPU-bound steps, shared by every loop that calls the function it returns:
 * the function resolves at once until `sliceMs` has passed since the slice began; after that, every caller waits for
 * the event loop's next turn (timers and I/O run meanwhile), where a new slice begins. So however many loops share
 * it, the thread is held for about one slice (plus the step each loop is in) before the process's timers run. Await
 * it between steps; a single step longer than the slice still runs whole.
 */
export function timeSlicer(sliceMs: number, monotonicMs: () => number = () => performance.now()): () => Promise<void> {
  let startedMs = monotonicMs();
  let turn: Promise<void> | undefined;
  return async () => {
    while (monotonicMs() - startedMs >= sliceMs) {
      turn ??= nextTurn().then(() => {
        startedMs = monotonicMs();
        turn = undefined;
      });
      await turn;
    }
  };
}
