import { AbortError } from "../errors.js";

/**
 * The options of everything that waits or talks to storage (CONTRIBUTING.md, "Abort signals"); options that add fields
 * extend it. Aborting the signal ends the operation early: it rejects with the signal's reason (or an
 * `AbortError`), and a storage request it was sending is cancelled.
 */
export interface Abortable {
  /** Aborts the operation. @default none (it runs to its end) */
  abortSignal?: AbortSignal;
}

/**
 * Waits `timeInMs`, cancellably. The one place in the library that creates a sleep timer (CONTRIBUTING.md,
 * "Abort signals"): the timer is cleared when the signal aborts, so an aborted wait never keeps the process alive.
 */
export function delay(timeInMs: number, options: Abortable = {}): Promise<void> {
  const { abortSignal } = options;
  return new Promise<void>((resolve, reject) => {
    if (abortSignal?.aborted) {
      reject(abortReason(abortSignal));
      return;
    }
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(abortReason(abortSignal));
    };
    const timer = setTimeout(
      () => {
        abortSignal?.removeEventListener("abort", onAbort);
        resolve();
      },
      Math.max(0, timeInMs),
    );
    abortSignal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** The error an aborted signal should surface as: its own reason when that is an Error, else an {@link AbortError}. */
export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new AbortError();
}

/** Throws the signal's reason if it has already fired. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}

/** Spreads `timeInMs` by ± `jitterRatio` (0–1) so many pollers do not move in lockstep. */
export function withJitter(timeInMs: number, jitterRatio: number, random: () => number = Math.random): number {
  return timeInMs * (1 - jitterRatio + 2 * jitterRatio * random());
}
