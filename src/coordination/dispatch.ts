import type { Versioned } from "../fencing/FencedStateStore";
import type { CoordinationDeps } from "./deps";
import { foldOutcomes, type FoldCounts, type ItemOutcome } from "./foldResults";
import { chunkSchema, keys, type JobState } from "./jobState";
import type { JobStore } from "./jobStore";
import { describeIssues, itemInputSchema, type WorkMessage } from "./messages";
import type { PortOptions } from "./ports";

/** Work messages sent at once. */
const SEND_PARALLELISM = 64;

/** What one dispatch did. */
export interface DispatchReport {
  /** Items sent to the work queue. */
  sent: number;
  /** Items recorded as failed instead: their chunk was missing or corrupt, or their entry in it was not an item input. */
  failed: number;
}

/** A chunk's entries, or why there are none. */
type ChunkRead = { ok: true; entries: unknown[] } | { ok: false; reason: string };

/**
 * Sends the next items of a job to the work queue — at most `budget`, and never more than `maxInFlight` items of the
 * job without a result — then advances the job's cursor in a fenced write. Sending first means a crash in between
 * re-sends those items (duplicates, which folding ignores) rather than losing them. An item whose input cannot be
 * read (its chunk blob missing or corrupt, or its entry not an item input) is not sent: it is recorded as failed in
 * the same write, with a reason naming the chunk.
 */
export async function dispatchJob(deps: CoordinationDeps, jobs: JobStore, job: Versioned<JobState>, budget: number, options: PortOptions): Promise<DispatchReport> {
  const state = job.value;
  const inFlight = state.dispatched - state.doneCount - state.failedCount;
  const count = Math.min(budget, state.itemCount - state.dispatched, deps.maxInFlight - inFlight);
  if (state.status !== "running" || count <= 0) return { sent: 0, failed: 0 };
  const messages: string[] = [];
  const failures: ItemOutcome[] = [];
  let chunkIndex = -1;
  let chunk: ChunkRead = { ok: true, entries: [] };
  for (let item = state.dispatched; item < state.dispatched + count; item++) {
    const wanted = Math.floor(item / state.chunkSize);
    if (wanted !== chunkIndex) {
      chunkIndex = wanted;
      chunk = await readChunk(deps, keys.chunk(state.id, chunkIndex), options);
    }
    const entry = item % state.chunkSize;
    const input = chunk.ok ? itemInputSchema.safeParse(chunk.entries[entry]) : undefined;
    if (input?.success === true) {
      const message: WorkMessage = { v: 1, jobId: state.id, item, kind: state.kind, params: state.params, input: input.data };
      messages.push(JSON.stringify(message));
      continue;
    }
    const where = `its chunk "${keys.chunk(state.id, chunkIndex)}"`;
    const reason = !chunk.ok
      ? chunk.reason
      : entry >= chunk.entries.length
        ? `${where} has ${chunk.entries.length} entries; entry ${entry} is missing`
        : `entry ${entry} of ${where} is not an item input: ${input === undefined ? "" : describeIssues(input.error)}`;
    failures.push({ item, ok: false, reason: `not dispatched: ${reason}` });
  }
  for (let start = 0; start < messages.length; start += SEND_PARALLELISM) {
    await deps.workQueue.send(messages.slice(start, start + SEND_PARALLELISM), options);
  }
  const end = state.dispatched + count;
  const attempt: { counts: FoldCounts } = { counts: { folded: 0, duplicates: 0, failed: 0 } };
  await jobs.updateJob(
    state.id,
    (current) => {
      attempt.counts = { folded: 0, duplicates: 0, failed: 0 }; // may run again after a lost race
      const advanced = { ...current, dispatched: Math.max(current.dispatched, end) };
      const next = failures.length > 0 ? (foldOutcomes(deps, advanced, failures, attempt.counts) ?? advanced) : advanced;
      return next.dispatched === current.dispatched && next === advanced ? undefined : next;
    },
    options,
    job,
  );
  return { sent: messages.length, failed: attempt.counts.failed };
}

/** Reads one chunk of a job's item inputs; a missing or corrupt chunk is a reason, not an exception. */
async function readChunk(deps: CoordinationDeps, name: string, options: PortOptions): Promise<ChunkRead> {
  const text = await deps.system.readText(name, options);
  if (text === undefined) return { ok: false, reason: `its chunk "${name}" is missing` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `its chunk "${name}" is not valid: ${error instanceof Error ? error.message : String(error)}` };
  }
  const parsed = chunkSchema.safeParse(value);
  return parsed.success ? { ok: true, entries: parsed.data } : { ok: false, reason: `its chunk "${name}" is not valid: ${describeIssues(parsed.error)}` };
}
