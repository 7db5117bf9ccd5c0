/** The queue trigger's wait between polls of an empty queue, as the queues extension computes it. */

/** The host's shortest wait, ms (QueuePollingIntervals.Minimum). */
export const MIN_POLL_MS = 100;
/** The randomisation of each increment (RandomizationFactor). */
const RANDOMIZATION = 0.2;

/**
 * The queues extension's RandomizedExponentialBackoffStrategy, with its minimum and increment both 100 ms: after an
 * empty receive the wait is 100 ms, then 100 ms + 2^(n−1) × 100 ms × a factor drawn from 0.8–1.2 (200, 300, 500, 900,
 * 1,700 ms …), until it would reach `maxMs` (host.json maxPollingInterval), which it then stays at; a receive that
 * found messages starts it over. Measured against the real extension by `npm run conformance:host` (row
 * queue.polling-backoff): a plain doubling reached the cap a step or two early.
 */
export class PollingBackoff {
  private currentMs = 0;
  private exponent = 0;

  /** @param random a number in [0, 1), as Math.random. */
  constructor(
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** The wait before the next poll, ms, after a receive that found messages (`found`) or not. */
  next(found: boolean): number {
    if (found) {
      this.currentMs = MIN_POLL_MS;
      this.exponent = 1;
      return this.currentMs;
    }
    if (this.currentMs === this.maxMs) return this.currentMs;
    let intervalMs = MIN_POLL_MS;
    if (this.exponent > 0) {
      const factor = 1 - RANDOMIZATION + this.random() * 2 * RANDOMIZATION;
      intervalMs += factor * 2 ** (this.exponent - 1) * MIN_POLL_MS;
    }
    if (intervalMs < this.maxMs) {
      this.currentMs = intervalMs;
      this.exponent++;
    } else this.currentMs = this.maxMs;
    return this.currentMs;
  }
}
