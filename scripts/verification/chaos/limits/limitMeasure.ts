/**
 * What the flow-limits chaos scenario measures from the recorded runs (pure, so its tests check it on made-up runs):
 * per pool, the most runs at once and the most starts in any window of the rate's period — every window, not only
 * aligned ones: the window ending at each start holds the most starts up to it.
 */

/** One run of an item: from its start to its end (undefined: it never reported one — its process died or froze). */
export interface Run {
  key: string;
  startMs: number;
  endMs: number | undefined;
}

/** A pool's limits and which runs count against it. */
export interface PoolSpec {
  name: string;
  concurrency: number;
  rate: { limit: number; periodMs: number };
  counts: (run: Run) => boolean;
}

/** What was measured of one pool, against its limits. */
export interface PoolFigures {
  pool: string;
  runs: number;
  maxConcurrency: number;
  concurrencyLimit: number;
  /** When the most were running (ms since the epoch). */
  maxConcurrencyAtMs: number | undefined;
  maxStartsInWindow: number;
  rateLimit: number;
  periodMs: number;
  /** The start that ended the fullest window. */
  maxStartsAtMs: number | undefined;
}

/** The most runs of `runs` at once; a run without an end counts until `openUntilMs`. Ends free before starts. */
export function maxConcurrency(runs: readonly Run[], openUntilMs: number): { max: number; atMs: number | undefined } {
  const events: [number, number][] = [];
  for (const run of runs) {
    events.push([run.startMs, 1]);
    events.push([run.endMs ?? openUntilMs, -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let running = 0;
  let max = 0;
  let atMs: number | undefined;
  for (const [ms, change] of events) {
    running += change;
    if (running > max) {
      max = running;
      atMs = ms;
    }
  }
  return { max, atMs };
}

/** The most starts in any window of `periodMs` (half-open: two starts exactly a period apart are in no one window). */
export function maxStartsInWindow(runs: readonly Run[], periodMs: number): { max: number; atMs: number | undefined } {
  const starts = runs.map((run) => run.startMs).sort((a, b) => a - b);
  let first = 0;
  let max = 0;
  let atMs: number | undefined;
  for (const [index, start] of starts.entries()) {
    while ((starts[first] ?? start) <= start - periodMs) first++;
    const count = index - first + 1;
    if (count > max) {
      max = count;
      atMs = start;
    }
  }
  return { max, atMs };
}

/** Each pool's figures. */
export function measurePools(runs: readonly Run[], pools: readonly PoolSpec[], openUntilMs: number): PoolFigures[] {
  return pools.map((pool) => {
    const counted = runs.filter(pool.counts);
    const concurrency = maxConcurrency(counted, openUntilMs);
    const starts = maxStartsInWindow(counted, pool.rate.periodMs);
    return {
      pool: pool.name,
      runs: counted.length,
      maxConcurrency: concurrency.max,
      concurrencyLimit: pool.concurrency,
      maxConcurrencyAtMs: concurrency.atMs,
      maxStartsInWindow: starts.max,
      rateLimit: pool.rate.limit,
      periodMs: pool.rate.periodMs,
      maxStartsAtMs: starts.atMs,
    };
  });
}

/** A violation for each pool over a limit. */
export function limitViolations(figures: readonly PoolFigures[]): string[] {
  const problems: string[] = [];
  for (const pool of figures) {
    if (pool.maxConcurrency > pool.concurrencyLimit)
      problems.push(
        `pool ${pool.pool}: ${pool.maxConcurrency} items running at once at ${iso(pool.maxConcurrencyAtMs)}, over its concurrency limit of ${pool.concurrencyLimit}`,
      );
    if (pool.maxStartsInWindow > pool.rateLimit)
      problems.push(
        `pool ${pool.pool}: ${pool.maxStartsInWindow} starts in the ${pool.periodMs / 1000} s window ending ${iso(pool.maxStartsAtMs)}, over its rate limit of ${pool.rateLimit}`,
      );
  }
  return problems;
}

function iso(ms: number | undefined): string {
  return ms === undefined ? "?" : new Date(ms).toISOString();
}
