import { groupByKind } from "../../../../src/groupBy/groupBy";
import type { TaskKind } from "../../../../src/coordination/kinds/taskKinds";
import { delay } from "../../../../src/library/util/delay";

/**
 * The kind of `bench:limits`' sustained measurement (issue 42): group-by whose every item takes `SUSTAINED_ITEM_MS`
 * (honouring its abort signal), as a call to a slow API does, and prints its run — start and end on the process's wall
 * clock (one machine: one clock) — as one stdout line the bench reads from the instance's log. No storage request: the
 * bench counts the app's requests per item through a proxy, and a recording kind's own would blur them. The kind has
 * no limits of its own: each job brings its own (`limits` in the submission).
 */

export const SUSTAINED_KIND = "bench-sustained";
/** How long each item runs, ms. */
export const SUSTAINED_ITEM_MS = 200;
/** The prefix of the line an item prints when it ends. */
export const RUN_LINE = "BENCH_RUN ";

/** One item's run, as its line carries it. */
export interface SustainedRun {
  jobId: string;
  index: number;
  startMs: number;
  endMs: number;
}

export const sustainedKind: TaskKind = {
  ...(groupByKind as TaskKind),
  name: SUSTAINED_KIND,
  process: async (input, context) => {
    const startMs = Date.now();
    await delay(SUSTAINED_ITEM_MS, { abortSignal: context.abortSignal });
    const partial: unknown = await groupByKind.process(input, context as never);
    const run: SustainedRun = { jobId: context.jobId, index: context.index, startMs, endMs: Date.now() };
    console.log(`${RUN_LINE}${JSON.stringify(run)}`);
    return partial;
  },
};
