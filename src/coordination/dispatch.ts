import type { Versioned } from "../library/fencing/FencedStateStore";
import type { CoordinationDeps } from "./deps";
import { foldOutcomes, type UnitOutcome } from "./foldOutcomes";
import type { FoldCounts } from "./foldReport";
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
 * each sends only part of it, and chunks never change once stored. Keeps the last {@link CACHED_CHUNKS} read, and at
 * most {@link CACHED_CHUNK_BYTES} of their text: a chunk of large inline items (up to 40 MB) is read again instead.
 * Chunks can be read ahead ({@link ChunkCache.prefetch}): a later `read` of the same chunk takes that read.
 */
export class ChunkCache {
  private readonly chunks = new Map<string, { read: ChunkRead; bytes: number }>();
  /** Reads started ahead, not taken yet; none rejects (a failure is kept, and thrown by the `read` that takes it). */
  private readonly ahead = new Map<string, Promise<{ ok: true; value: LoadedChunk } | { ok: false; error: unknown }>>();
  private bytes = 0;

  /** A chunk's entries (or why there are none), and the length of its text. */
  async read(deps: CoordinationDeps, name: string, options: Abortable): Promise<LoadedChunk> {
    const cached = this.chunks.get(name);
    if (cached !== undefined) return cached;
    const started = this.ahead.get(name);
    this.ahead.delete(name);
    let loaded: LoadedChunk;
    if (started === undefined) loaded = await readChunk(deps, name, options);
    else {
      const outcome = await started;
      if (!outcome.ok) throw outcome.error;
      loaded = outcome.value;
    }
    if (loaded.bytes > CACHED_CHUNK_BYTES) return loaded;
    this.chunks.set(name, loaded);
    this.bytes += loaded.bytes;
    for (const [oldest, entry] of this.chunks) {
      if (this.chunks.size <= CACHED_CHUNKS && this.bytes <= CACHED_CHUNK_BYTES) break;
      this.chunks.delete(oldest);
      this.bytes -= entry.bytes;
    }
    return loaded;
  }

  /** Starts reading a chunk that is neither cached nor being read ahead, for a later {@link ChunkCache.read}. */
  prefetch(deps: CoordinationDeps, name: string, options: Abortable): void {
    if (this.chunks.has(name) || this.ahead.has(name)) return;
    this.ahead.set(
      name,
      readChunk(deps, name, options).then(
        (value) => ({ ok: true as const, value }),
        (error: unknown) => ({ ok: false as const, error }),
      ),
    );
  }
}

/** A chunk as read: its entries or why there are none, and the length of its text. */
interface LoadedChunk {
  read: ChunkRead;
  bytes: number;
}

/**
 * Chunks read ahead of the one being packed, while that one's text is at most {@link PREFETCH_MAX_CHUNK_BYTES}: a pass
 * of 8,192 small items spans 9 chunks, and reading them one after the other held the first send back by 9 round trips
 * (issue 24's slow rounds). Chunks of large items are read one at a time, as before, so the leader holds one of them.
 */
const PREFETCH_CHUNKS = 8;
const PREFETCH_MAX_CHUNK_BYTES = 1024 * 1024;

/** Most chunks a {@link ChunkCache} keeps: two per job for a few active jobs. */
const CACHED_CHUNKS = 8;
/** Most chunk text a {@link ChunkCache} keeps, in bytes (UTF-16 code units, as read). */
const CACHED_CHUNK_BYTES = 16 * 1024 * 1024;

/** How a job's items are packed into units: fixed when the job registers, so a unit's boundaries never change. */
export function unitLimits(
  deps: Pick<CoordinationDeps, "workUnitMaxItems" | "workUnitMaxBytes">,
  state: Pick<JobState, "unitMaxItems" | "unitMaxBytes">,
): { items: number; bytes: number } {
  return { items: state.unitMaxItems ?? deps.workUnitMaxItems, bytes: state.unitMaxBytes ?? deps.workUnitMaxBytes };
}

/** Options of {@link dispatchJob}. */
export interface DispatchOptions extends Abortable {
  /** Chunks read earlier in the same step. @default a fresh cache */
  chunks?: ChunkCache;
  /** Called after each group of units is sent: the step reports progress to its term's stall watchdog. */
  onGroupSent?: () => void;
  /** Monotonic clock, for the pace of cursor writes. @default performance.now */
  monotonicMs?: () => number;
}

/** After the first group, the job's cursor is written at most this often during one dispatch (and at its end). */
export const CURSOR_WRITE_INTERVAL_MS = 1000;

/**
 * Sends the next items of a job to the work queue in units — whole units of up to the job's `unitMaxItems` items and
 * `unitMaxBytes` bytes of JSON, contiguous and packed greedily from the cursor — starting units while fewer than
 * `budget` items were sent and fewer than `maxInFlight` items of the job lack a result (the last unit may go past
 * either by less than one unit). Units go out in groups of {@link SEND_PARALLELISM}. The job's cursor advances past
 * what was sent in a fenced write after the first group (so the status shows the job started while a large batch is
 * still going out), then at most every {@link CURSOR_WRITE_INTERVAL_MS}, and at the end: a job document, aggregate and
 * all, is not rewritten per group, and a crash re-sends at most the groups since the last write. The cursor always
 * sits on a unit boundary, and a unit re-sent after a crash is the same unit (folding discards it by its bits).
 * Sending first means a crash in between re-sends those units (duplicates) rather than losing them. An item whose
 * input cannot be read (its chunk blob missing or corrupt, or its entry not an item input) is not sent, and ends its
 * unit: it is recorded as failed in the next write, with a reason naming the chunk.
 */
export async function dispatchJob(
  deps: CoordinationDeps,
  jobs: JobStore,
  job: Versioned<JobState>,
  budget: number,
  options: DispatchOptions = {},
): Promise<DispatchReport> {
  const { chunks = new ChunkCache(), onGroupSent, monotonicMs = () => performance.now() } = options;
  const io: Abortable = options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal };
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
  // The group being built; the items failed since the last write; the first item after everything handled so far.
  let messages: string[] = [];
  let failures: UnitOutcome["failed"] = [];
  let cursor = state.dispatched;
  let written = state.dispatched;
  let lastWriteMs: number | undefined;
  const writeCursor = async (): Promise<void> => {
    if (cursor === written && failures.length === 0) return;
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
        io,
        latest,
      )) ?? latest;
    report.failed += attempt.counts.failed;
    failures = [];
    written = end;
    lastWriteMs = monotonicMs();
  };
  const sendGroup = async (): Promise<void> => {
    if (messages.length > 0) {
      await deps.workQueue.send(messages, io);
      report.messages += messages.length;
      messages = [];
      onGroupSent?.();
    }
    if (lastWriteMs === undefined || monotonicMs() - lastWriteMs >= CURSOR_WRITE_INTERVAL_MS) await writeCursor();
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
    report.sent += unit.inputs.length;
    cursor = unit.first + unit.inputs.length;
    unit = undefined;
    if (messages.length >= SEND_PARALLELISM) await sendGroup();
  };
  let chunkIndex = -1;
  let chunk: ChunkRead = { ok: true, entries: [] };
  // The last chunk this dispatch may need: the last unit may run past `count` by less than a unit.
  const lastChunk = Math.floor(
    (Math.min(state.itemCount, state.dispatched + count + limits.items) - 1) / state.chunkSize,
  );
  for (
    let item = state.dispatched;
    item < state.itemCount && (item - state.dispatched < count || unit !== undefined);
    item++
  ) {
    const wanted = Math.floor(item / state.chunkSize);
    if (wanted !== chunkIndex) {
      chunkIndex = wanted;
      const loaded = await chunks.read(deps, keys.chunk(state.id, chunkIndex), io);
      chunk = loaded.read;
      if (loaded.bytes <= PREFETCH_MAX_CHUNK_BYTES)
        for (let next = chunkIndex + 1; next <= Math.min(lastChunk, chunkIndex + PREFETCH_CHUNKS); next++)
          chunks.prefetch(deps, keys.chunk(state.id, next), io);
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
  await sendGroup();
  await writeCursor();
  return report;
}

/**
 * Reads one chunk of a job's item inputs, and the length of its text; a missing or corrupt chunk is a reason, not an
 * exception.
 */
async function readChunk(deps: CoordinationDeps, name: string, options: Abortable): Promise<LoadedChunk> {
  const text = await deps.system.readText(name, options);
  if (text === undefined) return { read: { ok: false, reason: `its chunk "${name}" is missing` }, bytes: 0 };
  const invalid = (why: string) => ({
    read: { ok: false as const, reason: `its chunk "${name}" is not valid: ${why}` },
    bytes: 0,
  });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return invalid(error instanceof Error ? error.message : String(error));
  }
  const parsed = chunkSchema.safeParse(value);
  return parsed.success
    ? { read: { ok: true, entries: parsed.data }, bytes: text.length }
    : invalid(describeIssues(parsed.error));
}
