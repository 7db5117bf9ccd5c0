/**
 * The baselines' shared constants, message shapes and the protocol lines their worker processes print. The numbers
 * mirror host.json `extensions.queues` and the app (results received 32 at a time — the queue's most —, work sent 64
 * at a time as the leader's dispatch does), so every side does the same queue operations in the same batch sizes.
 */

/** Work messages received at once (host.json batchSize). */
export const BASELINE_BATCH_SIZE = 16;
/** Fetch again once no more than this many are still running (host.json newBatchThreshold). */
export const BASELINE_NEW_BATCH_THRESHOLD = 8;
/** Visibility timeout of received messages, s. */
export const BASELINE_VISIBILITY_S = 30;
/** Results received at once (the leader's fold batch). */
export const BASELINE_RESULT_BATCH = 32;
/** Work messages sent at once (the leader's dispatch parallelism). */
export const BASELINE_SEND_PARALLELISM = 64;
/** Idle back-off: from 100 ms, doubling, up to host.json maxPollingInterval (2 s). */
export const POLL_MIN_MS = 100;
export const POLL_MAX_MS = 2_000;

/**
 * How long the idle pair (the app's instances, the loop's workers) idle before the job comes: their queue polling's
 * back-off (100 ms doubling, ±20 % jitter) has passed 100 + 200 + 400 + 800 + 1,600 ms — at most 3,720 ms with the
 * jitter, plus the polls' own round trips (a few ms each) — and waits its longest, host.json's `maxPollingInterval`
 * (2 s), between polls: the state of a deployed app's warm idle instances when a job comes (an on-demand Flex instance
 * that has scaled in starts cold instead, which neither side here does).
 */
export const IDLE_LOOP_MS = 4_000;

type Input = { inline: string } | { blob: string };

/** A work message: one item (the per-item loop), or a unit of items `first`, `first + 1`, … (the batched loop). */
export type BaselineWork =
  | { v: 1; jobId: string; item: number; kind: string; params: unknown; input: Input }
  | { v: 2; jobId: string; first: number; kind: string; params: unknown; inputs: Input[] };

/** A result message: the partial of the message's items (`count` from `first`). */
export interface BaselineResult {
  jobId: string;
  first: number;
  count: number;
  partial: unknown;
}

/** A line a baseline worker prints on stdout. */
export type WorkerLine =
  { kind: "ready"; pid: number } | { kind: "stopped"; pid: number; processed: number; failed: number };

/** One protocol line, newline-terminated. */
export function formatWorkerLine(line: WorkerLine): string {
  return `${JSON.stringify(line)}\n`;
}

/** Parses a protocol line; undefined for anything else. */
export function parseWorkerLine(text: string): WorkerLine | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const line = value as Partial<Record<string, unknown>>;
  if (typeof line.pid !== "number") return undefined;
  if (line.kind === "ready") return { kind: "ready", pid: line.pid };
  if (line.kind === "stopped" && typeof line.processed === "number" && typeof line.failed === "number")
    return { kind: "stopped", pid: line.pid, processed: line.processed, failed: line.failed };
  return undefined;
}

/** Exponential idle back-off: `next()` gives the next wait, `reset()` starts over after a non-empty receive. */
export function pollDelaysMs(): { next(): number; reset(): void } {
  let current = POLL_MIN_MS;
  return {
    next() {
      const value = current;
      current = Math.min(current * 2, POLL_MAX_MS);
      return value;
    },
    reset() {
      current = POLL_MIN_MS;
    },
  };
}
