import type { Versioned } from "../fencing/FencedStateStore";
import type { CoordinationDeps } from "./deps";
import { chunkSchema, keys, type JobState } from "./jobState";
import type { JobStore } from "./jobStore";
import type { WorkMessage } from "./messages";
import type { PortOptions } from "./ports";

/** Work messages sent at once. */
const SEND_PARALLELISM = 64;

/**
 * Sends the next items of a job to the work queue — at most `budget`, and never more than `maxInFlight` items of the
 * job without a result — then advances the job's cursor in a fenced write. Sending first means a crash in between
 * re-sends those items (duplicates, which folding ignores) rather than losing them. Returns how many were sent.
 */
export async function dispatchJob(deps: CoordinationDeps, jobs: JobStore, job: Versioned<JobState>, budget: number, options: PortOptions): Promise<number> {
  const state = job.value;
  const inFlight = state.dispatched - state.doneCount - state.failedCount;
  const count = Math.min(budget, state.itemCount - state.dispatched, deps.maxInFlight - inFlight);
  if (state.status !== "running" || count <= 0) return 0;
  const messages: string[] = [];
  let chunkIndex = -1;
  let chunk: unknown[] = [];
  for (let item = state.dispatched; item < state.dispatched + count; item++) {
    const wanted = Math.floor(item / state.chunkSize);
    if (wanted !== chunkIndex) {
      chunkIndex = wanted;
      const text = await deps.system.readText(keys.chunk(state.id, chunkIndex), options);
      chunk = text === undefined ? [] : chunkSchema.parse(JSON.parse(text));
    }
    const input = chunk[item % state.chunkSize];
    const message: WorkMessage = { v: 1, jobId: state.id, item, kind: state.kind, params: state.params, input: input as WorkMessage["input"] };
    messages.push(JSON.stringify(message));
  }
  for (let start = 0; start < messages.length; start += SEND_PARALLELISM) {
    await deps.workQueue.send(messages.slice(start, start + SEND_PARALLELISM), options);
  }
  await jobs.writeJob({ ...state, dispatched: state.dispatched + count }, job, options);
  return count;
}
