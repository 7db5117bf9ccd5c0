import { StorageError } from "../errors.js";
import { delay, type Abortable } from "./delay.js";

/**
 * Runs `operation` with a signal that fires after `timeoutInMs` (or when the caller's signal fires). Built on the one
 * cancellable {@link delay}, so fake timers drive it in tests. When the timeout, not the caller, ended it, the
 * rejection is a `StorageError` with code `"Timeout"`; the caller's abort (`options.abortSignal`) aborts the operation
 * too and passes through unchanged.
 */
export async function withTimeout<T>(
  timeoutInMs: number,
  operation: (signal: AbortSignal) => Promise<T>,
  options: Abortable = {},
): Promise<T> {
  const { abortSignal } = options;
  abortSignal?.throwIfAborted();
  const controller = new AbortController();
  const timedOut = new StorageError(
    "Timeout",
    undefined,
    `Storage did not answer within ${Math.round(timeoutInMs)} ms.`,
  );
  const onAbort = (): void => {
    controller.abort(abortSignal?.reason);
  };
  abortSignal?.addEventListener("abort", onAbort, { once: true });
  const timerDone = new AbortController();
  delay(timeoutInMs, { abortSignal: timerDone.signal }).then(
    () => {
      controller.abort(timedOut);
    },
    () => undefined,
  );
  try {
    return await operation(controller.signal);
  } catch (error) {
    if (controller.signal.aborted) {
      const reason: unknown = controller.signal.reason;
      throw reason instanceof Error ? reason : error;
    }
    throw error;
  } finally {
    timerDone.abort();
    abortSignal?.removeEventListener("abort", onAbort);
  }
}
