import type { Versioned } from "../library/fencing/FencedStateStore";
import type { CoordinationDeps } from "./deps";
import { foldOutcomes, type FoldCounts, type UnitOutcome } from "./foldResults";
import { chunkSchema, keys, type JobState } from "./jobState";
import type { JobStore } from "./jobStore";
import { describeIssues, itemInputSchema, type ItemInput, type UnitWorkMessage } from "./messages";
import type { Abortable } from "../library/util/delay";

/** Work messages sent at once: a group, after which the job's cursor is written. */
const SEND_PARALLELISM = 64;

/**
 * Most bytes of JSON a work message may have: a queue message holds 64 KiB of text, and base64 turns every 3 bytes
 * into 4. A unit of one item that would be larger cannot be sent at all (storage answers 413).
 */
export const MAX_WORK_MESSAGE_BYTES = 48 * 1024;

/** What one dispatch did. */
export interface DispatchReport {
  /** Items sent to the work queue. */
  sent: number;
  /** Work messages (units) they went in. */
  messages: number;
  /**
   * Items recorded as failed instead: their chunk was missing or corrupt, or their entry in it was not an item input.
   */
  failed: number;
}

/** A chunk's entries, or why there are none. */
type ChunkRead = { ok: true; entries: unknown[] } | { ok: false; reason: string };

/**
 * Chunks already read, by blob name, for the passes of one step: a 1,000-item chunk feeds several dispatches when
 * each sends only part of it, and chunks never change once stored. Keeps the last {@link CACHED_CHUNKS} read.
 */
export class ChunkCache {
  private readonly chunks = new Map<string, ChunkRead>();

  async read(deps: CoordinationDeps, name: string, options: Abortable): Promise<ChunkRead> {
    const cached = this.chunks.get(name);
    if (cached !== undefined) return cached;
    const read = await readChunk(deps, name, options);
    this.chunks.set(name, read);
    for (const oldest of this.chunks.keys()) {
      if (this.chunks.size <= CACHED_CHUNKS) break;
      this.chunks.delete(oldest);
    }
    return read;
  }
}

/** Most chunks a {@link ChunkCache} keeps: two per job for a few active jobs. */
const CACHED_CHUNKS = 8;

/** How a job's items are packed into units: fixed when the job registers, so a unit's boundaries never change. */
export function unitLimits(
  deps: Pick<CoordinationDeps, "workUnitMaxItems" | "workUnitMaxBytes">,
  state: Pick<JobState, "unitMaxItems" | "unitMaxBytes">,
): { items: number; bytes: number } {
  return { items: state.unitMaxItems ?? deps.workUnitMaxItems, bytes: state.unitMaxBytes ?? deps.workUnitMaxBytes };
}

/**
 * Sends the next items of a job to the work queue in units — whole units of up to the job's `unitMaxItems` items and
 * `unitMaxBytes` bytes of JSON, contiguous and packed greedily from the cursor — starting units while fewer than
 * `budget` items were sent and fewer than `maxInFlight` items of the job lack a result (the last unit may go past
 * either by less than one unit). Units go out in groups of {@link SEND_PARALLELISM}; after each group the job's cursor
 * advances past it in a fenced write, so workers start on the first group at once, the status shows progress while a
 * large batch is still going out, and a crash re-sends at most one group. The cursor always sits on a unit boundary,
 * and a unit re-sent after a crash is the same unit (folding discards it by its bits). Sending first means a crash in
 * between re-sends those units (duplicates) rather than losing them. An item whose input cannot be read (its chunk
 * blob missing or corrupt, or its entry not an item input) is not sent, and ends its unit: it is recorded as failed in
 * its group's write, with a reason naming the chunk.
 */
export async function dispatchJob(
  deps: CoordinationDeps,
  jobs: JobStore,
  job: Versioned<JobState>,
  budget: number,
  options: Abortable,
  chunks: ChunkCache = new ChunkCache(),
): Promise<DispatchReport> {
  const state = job.value;
  const inFlight = state.dispatched - state.doneCount - state.failedCount;
  const count = Math.min(budget, state.itemCount - state.dispatched, deps.maxInFlight - inFlight);
  const report: DispatchReport = { sent: 0, messages: 0, failed: 0 };
  if (state.status !== "running" || count <= 0) return report;
  const limits = unitLimits(deps, state);
  // The envelope of a unit, with the widest item index the job has: what every unit costs besides its inputs.
  const envelopeBytes = Buffer.byteLength(
    JSON.stringify({
      v: 2,
      jobId: state.id,
      first: state.itemCount,
      kind: state.kind,
      params: state.params,
      inputs: [],
    } satisfies UnitWorkMessage),
  );
  let latest = job;
  // The group being built: its messages, the items it failed, and the first item after it (the cursor once written).
  let messages: string[] = [];
  let failures: UnitOutcome["failed"] = [];
  let sentItems = 0;
  let cursor = state.dispatched;
  const record = async (): Promise<void> => {
    if (messages.length === 0 && failures.length === 0) return;
    if (messages.length > 0) await deps.workQueue.send(messages, options);
    const end = cursor;
    const failed = failures;
    const attempt: { counts: FoldCounts } = { counts: { folded: 0, duplicates: 0, failed: 0 } };
    latest =
      (await jobs.updateJob(
        state.id,
        (current) => {
          attempt.counts = { folded: 0, duplicates: 0, failed: 0 }; // may run again after a lost race
          const advanced = { ...current, dispatched: Math.max(current.dispatched, end) };
          const next =
            failed.length > 0
              ? (foldOutcomes(deps, advanced, [{ done: [], failed }], attempt.counts) ?? advanced)
              : advanced;
          return next.dispatched === current.dispatched && next === advanced ? undefined : next;
        },
        options,
        latest,
      )) ?? latest;
    report.sent += sentItems;
    report.messages += messages.length;
    report.failed += attempt.counts.failed;
    messages = [];
    failures = [];
    sentItems = 0;
  };
  let unit: { first: number; inputs: ItemInput[]; bytes: number } | undefined;
  const close = async (): Promise<void> => {
    if (unit === undefined) return;
    messages.push(
      JSON.stringify({
        v: 2,
        jobId: state.id,
        first: unit.first,
        kind: state.kind,
        params: state.params,
        inputs: unit.inputs,
      } satisfies UnitWorkMessage),
    );
    sentItems += unit.inputs.length;
    cursor = unit.first + unit.inputs.length;
    unit = undefined;
    if (messages.length >= SEND_PARALLELISM) await record();
  };
  let chunkIndex = -1;
  let chunk: ChunkRead = { ok: true, entries: [] };
  for (
    let item = state.dispatched;
    item < state.itemCount && (item - state.dispatched < count || unit !== undefined);
    item++
  ) {
    const wanted = Math.floor(item / state.chunkSize);
    if (wanted !== chunkIndex) {
      chunkIndex = wanted;
      chunk = await chunks.read(deps, keys.chunk(state.id, chunkIndex), options);
    }
    const entry = item % state.chunkSize;
    const input = chunk.ok ? itemInputSchema.safeParse(chunk.entries[entry]) : undefined;
    const bytes = input?.success === true ? Buffer.byteLength(JSON.stringify(input.data)) + 1 : 0;
    if (input?.success === true && envelopeBytes + bytes <= MAX_WORK_MESSAGE_BYTES) {
      if (unit !== undefined && envelopeBytes + unit.bytes + bytes > limits.bytes) {
        await close();
        if (item - state.dispatched >= count) break; // this item starts the next unit, in a later dispatch
      }
      unit ??= { first: item, inputs: [], bytes: 0 };
      unit.inputs.push(input.data);
      unit.bytes += bytes;
      if (unit.inputs.length >= limits.items) await close();
      continue;
    }
    await close();
    const where = `its chunk "${keys.chunk(state.id, chunkIndex)}"`;
    const reason = !chunk.ok
      ? chunk.reason
      : entry >= chunk.entries.length
        ? `${where} has ${chunk.entries.length} entries; entry ${entry} is missing`
        : input?.success === true
          ? `its work message would be ${envelopeBytes + bytes} bytes of JSON, more than a queue message holds (${MAX_WORK_MESSAGE_BYTES} bytes); put large inputs in a blob`
          : `entry ${entry} of ${where} is not an item input: ${input === undefined ? "" : describeIssues(input.error)}`;
    failures.push({ item, reason: `not dispatched: ${reason}` });
    cursor = item + 1;
  }
  await close();
  await record();
  return report;
}

/** Reads one chunk of a job's item inputs; a missing or corrupt chunk is a reason, not an exception. */
async function readChunk(deps: CoordinationDeps, name: string, options: Abortable): Promise<ChunkRead> {
  const text = await deps.system.readText(name, options);
  if (text === undefined) return { ok: false, reason: `its chunk "${name}" is missing` };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return {
      ok: false,
      reason: `its chunk "${name}" is not valid: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
  const parsed = chunkSchema.safeParse(value);
  return parsed.success
    ? { ok: true, entries: parsed.data }
    : { ok: false, reason: `its chunk "${name}" is not valid: ${describeIssues(parsed.error)}` };
}
