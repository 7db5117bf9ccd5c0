import { BlobServiceClient, type ContainerClient } from "@azure/storage-blob";
import { groupByKind } from "../../../../src/groupBy/groupBy";
import type { TaskKind } from "../../../../src/coordination/kinds/taskKinds";
import { delay } from "../../../../src/library/util/delay";

/**
 * The kind of the flow-limits chaos scenario (issue 42): group-by under global limits, kind-wide and per key, that
 * records each item's run in storage — a blob per run, written when the item starts (its start, key, process) and again
 * when it ends — so the scenario can measure, from storage alone, the most items running at once and the most starts
 * in any window of each pool, across every process. Each item takes 300–800 ms (by its index), honouring its abort
 * signal, as a kind calling a rate-limited API does.
 */

/** The kind's name. */
export const LIMITED_KIND = "chaos-limited";
/** The container the runs are recorded in (created by the scenario). */
export const RUNS_CONTAINER = "chaos-limit-runs";
/** Keys (tenants) the items are spread over: item i has key `t${i % KEYS}`. */
export const KEYS = 3;

/** The kind's limits: at most 4 running and 6 started per 2 s overall; per key 2 running and 3 started per 2 s. */
export const CHAOS_LIMITS = {
  concurrency: 4,
  rate: { limit: 6, periodSeconds: 2 },
  perKey: { concurrency: 2, rate: { limit: 3, periodSeconds: 2 } },
} as const;

/** One item's run as recorded: start and end on the process's wall clock (one machine: one clock), ms. */
export interface RecordedRun {
  jobId: string;
  index: number;
  key: string;
  instance: string;
  pid: number;
  startMs: number;
  endMs?: number;
  /** How the run ended: "done", or the error's message (aborted, …). */
  outcome?: string;
}

/** How long item `index` runs, in ms. */
export function itemMs(index: number): number {
  return 300 + ((index * 97) % 500);
}

let container: ContainerClient | undefined;

function runs(): ContainerClient {
  const connection = process.env.COORDINATION_STORAGE;
  if (connection === undefined || connection === "") throw new Error("COORDINATION_STORAGE is not set.");
  container ??= BlobServiceClient.fromConnectionString(connection).getContainerClient(RUNS_CONTAINER);
  return container;
}

async function record(name: string, run: RecordedRun): Promise<void> {
  const text = JSON.stringify(run);
  await runs().getBlockBlobClient(name).upload(text, Buffer.byteLength(text));
}

/** The recording, limited group-by kind. */
export const limitedRecordingKind: TaskKind = {
  ...(groupByKind as TaskKind),
  name: LIMITED_KIND,
  limits: { ...CHAOS_LIMITS, key: (item) => `t${item.index % KEYS}` },
  process: async (input, context) => {
    // The start is the kind's call: the moment the worker's gate counted (taken in the same synchronous run).
    const startMs = Date.now();
    const run: RecordedRun = {
      jobId: context.jobId,
      index: context.index,
      key: `t${context.index % KEYS}`,
      instance: process.env.WEBSITE_INSTANCE_ID ?? "unknown",
      pid: process.pid,
      startMs,
    };
    const name = `${context.jobId}/${context.index}-${process.pid}-${startMs}.json`;
    await record(name, run);
    try {
      await delay(Math.max(0, startMs + itemMs(context.index) - Date.now()), { abortSignal: context.abortSignal });
      const partial: unknown = await groupByKind.process(input, context as never);
      run.endMs = Date.now();
      run.outcome = "done";
      return partial;
    } catch (error) {
      run.endMs = Date.now();
      run.outcome = error instanceof Error ? error.message : String(error);
      throw error;
    } finally {
      await record(name, run).catch(() => undefined);
    }
  },
};
