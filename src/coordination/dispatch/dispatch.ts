import type { Versioned } from "../../library/fencing/FencedStateStore.js";
import type { LeadershipTerm } from "../../library/leadership/Term.js";
import type { CoordinationDeps } from "../deps.js";
import type { UnitOutcome } from "../fold/foldOutcomes.js";
import { endsTheStep } from "../fold/rejectMessages.js";
import { ChunkCache } from "./chunkCache.js";
import { heldCount } from "../state/heldItems.js";
import type { JobState } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";
import { packUnits, unitLimits, type Packed } from "./packUnits.js";
import { recordCursor, type UnrecordedCursor } from "./recordCursor.js";
import type { Abortable } from "../../library/util/delay.js";

/** Work messages sent at once: a group, after which the job's cursor is written. */
const SEND_PARALLELISM = 64;

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
  /**
   * Set when the dispatch failed after units went out that its cursor write did not record: what to record
   * ({@link recordCursor}) before the job is dispatched again, so that they are not sent again, and the error.
   */
  unrecorded?: UnrecordedCursor;
}

/** Options of {@link dispatchJob}. */
export interface DispatchOptions extends Abortable {
  /** Chunks read earlier in the same step. @default a fresh cache */
  chunks?: ChunkCache;
  /**
   * Told after each group of units is sent: the step's term, whose stall watchdog a long dispatch keeps fed. @default
   * nobody
   */
  progress?: Pick<LeadershipTerm, "reportProgress">;
  /** Monotonic clock, for the pace of cursor writes. @default performance.now */
  monotonicMs?: () => number;
}

/** After the first group, the job's cursor is written at most this often during one dispatch (and at its end). */
export const CURSOR_WRITE_INTERVAL_MS = 1000;

/**
 * Sends the next items of a job to the work queue in units — whole units of up to the job's `unitMaxItems` items and
 * `unitMaxBytes` bytes of JSON, contiguous and packed greedily from the cursor — starting units while fewer than
 * `budget` items were sent and fewer than `maxInFlight` items of the job lack a result (the last unit may go past
 * either by less than one unit). The job's tail does not wait for a round of its own: when what is left of the job
 * past the window is at most half the window and fits in `workUnitSpread` units (as packed), it goes out too — at a
 * job's end only (a last round of a few units would otherwise start only once the leader has folded the window's first
 * results, on whichever worker polls first). Units go out in groups of {@link SEND_PARALLELISM}. The
 * job's cursor advances past what was sent in a fenced write after the first group (so the status shows the job
 * started while a large batch is still going out), then at most every {@link CURSOR_WRITE_INTERVAL_MS}, and at the end:
 * a job document, aggregate and all, is not rewritten per group, and a crash re-sends at most the groups since the
 * last write. The cursor always sits on a unit boundary, and a unit re-sent after a crash is the same unit (folding
 * discards it by its bits). Sending first means a crash in between re-sends those units (duplicates) rather than
 * losing them. An item whose input cannot be read (its chunk blob missing or corrupt, or its entry not an item input)
 * is not sent, and ends its unit: it is recorded as failed in the next write, with a reason naming the chunk.
 */
export async function dispatchJob(
  deps: CoordinationDeps,
  jobs: JobStore,
  job: Versioned<JobState>,
  budget: number,
  options: DispatchOptions = {},
): Promise<DispatchReport> {
  const { chunks = new ChunkCache(), progress, monotonicMs = () => performance.now() } = options;
  const io: Abortable = options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal };
  const state = job.value;
  // Held items are accounted for by a message (their failure inferred): not in flight, for the window.
  const inFlight = state.dispatched - state.doneCount - state.failedCount - heldCount(state);
  const room = deps.maxInFlight - inFlight;
  const count = Math.min(budget, state.itemCount - state.dispatched, room);
  if (state.status !== "running" || count <= 0) return { sent: 0, messages: 0, failed: 0 };
  const sender = new UnitSender(deps, jobs, job, { ...io, progress, monotonicMs });
  try {
    await sendWindow(deps, state, sender, { count, room, chunks, io });
  } catch (error) {
    // Units went out that the cursor does not record (its write failed, or a later send): the caller records them
    // before dispatching the job again. Sending them again at every pass while the write keeps failing (storage
    // refusing it, not a race) would put the job's window on the queue again and again (issue 43, suspicion 2).
    const unrecorded = endsTheStep(error, io) ? undefined : sender.unrecorded(error);
    if (unrecorded === undefined) throw error;
    return { ...sender.report, unrecorded };
  }
  return sender.report;
}

/** Packs and sends the job's next units, its tail with them when it fits ({@link dispatchJob}); writes the cursor. */
async function sendWindow(
  deps: CoordinationDeps,
  state: JobState,
  sender: UnitSender,
  window: { count: number; room: number; chunks: ChunkCache; io: Abortable },
): Promise<void> {
  const { count, room, chunks, io } = window;
  // The job's tail: when the window is what stops this dispatch (not the pass's budget: the next pass sends more), what
  // is left of the job goes out too if it is at most half the window in items (a window lowered for costly items stays
  // within 1.5 times itself) and fits in WORK_UNIT_SPREAD units — it cannot, in items, when it is more than that many
  // full units. Packed ahead and held; dropped once it grows past.
  const windowEnd = state.dispatched + count;
  const rest = state.itemCount - windowEnd;
  const tailMayFit =
    count === room &&
    rest > 0 &&
    rest <= Math.floor(deps.maxInFlight / 2) &&
    rest <= deps.workUnitSpread * unitLimits(deps, state).items;
  let tail: Packed[] | undefined = tailMayFit ? [] : undefined;
  let tailUnits = 0;
  for await (const piece of packUnits(deps, state, {
    from: state.dispatched,
    until: tail === undefined ? windowEnd : state.itemCount,
    chunks,
    ...io,
  })) {
    if (tail !== undefined && (piece.kind === "unit" ? piece.first : piece.item) >= windowEnd) {
      tail.push(piece);
      if (piece.kind === "unit") tailUnits++;
      if (tailUnits <= deps.workUnitSpread) continue;
      tail = undefined;
      break;
    }
    await sender.take(piece);
  }
  for (const piece of tail ?? []) await sender.take(piece);
  await sender.sendGroup();
  await sender.writeCursor();
}

/**
 * One dispatch's sending: the units taken, sent in groups of {@link SEND_PARALLELISM}, and the job's cursor (with the
 * items failed unsent) written after the first group, then at most every {@link CURSOR_WRITE_INTERVAL_MS}.
 */
class UnitSender {
  readonly report: DispatchReport = { sent: 0, messages: 0, failed: 0 };
  /** The job as last written. */
  private latest: Versioned<JobState>;
  /** The group being built. */
  private messages: string[] = [];
  /** The items failed since the last write. */
  private failures: UnitOutcome["failed"] = [];
  /** The first item after everything handled so far. */
  private cursor: number;
  /** The first item after everything sent (or failed unsent) so far: the groups sent, not the one being built. */
  private sentUpTo: number;
  private written: number;
  private lastWriteMs: number | undefined;
  private readonly jobId: string;

  constructor(
    private readonly deps: CoordinationDeps,
    private readonly jobs: JobStore,
    job: Versioned<JobState>,
    private readonly options: Abortable & Pick<DispatchOptions, "progress"> & { monotonicMs: () => number },
  ) {
    this.latest = job;
    this.jobId = job.value.id;
    this.cursor = this.sentUpTo = this.written = job.value.dispatched;
  }

  /** A piece as packed: a unit to the group (sent once full), or an item that cannot be sent, to fail. */
  async take(piece: Packed): Promise<void> {
    if (piece.kind === "unsendable") {
      this.failures.push({ item: piece.item, reason: `not dispatched: ${piece.reason}` });
      this.cursor = piece.item + 1;
      return;
    }
    this.messages.push(piece.message);
    this.report.sent += piece.count;
    this.cursor = piece.first + piece.count;
    if (this.messages.length >= SEND_PARALLELISM) await this.sendGroup();
  }

  /** Sends the group, and writes the cursor when the last write is old enough (or there was none). */
  async sendGroup(): Promise<void> {
    const { deps, options } = this;
    if (this.messages.length > 0) {
      await deps.workQueue.send(this.messages, this.io());
      this.report.messages += this.messages.length;
      this.messages = [];
      options.progress?.reportProgress();
    }
    this.sentUpTo = this.cursor;
    if (this.lastWriteMs === undefined || options.monotonicMs() - this.lastWriteMs >= CURSOR_WRITE_INTERVAL_MS)
      await this.writeCursor();
  }

  /** The cursor past what was sent, and the items failed unsent, in one fenced write (none when nothing changed). */
  async writeCursor(): Promise<void> {
    if (this.cursor === this.written && this.failures.length === 0) return;
    const end = this.cursor;
    const written = await recordCursor(
      this.deps,
      this.jobs,
      this.latest,
      { cursor: end, failures: this.failures },
      this.io(),
    );
    this.latest = written.job;
    this.report.failed += written.failed;
    this.failures = [];
    this.written = end;
    this.lastWriteMs = this.options.monotonicMs();
  }

  /** After `error`: the units sent that no write recorded, if any ({@link DispatchReport.unrecorded}). */
  unrecorded(error: unknown): UnrecordedCursor | undefined {
    if (this.sentUpTo <= this.written) return undefined;
    const cursor = this.sentUpTo;
    return { cursor, failures: this.failures.filter((failure) => failure.item < cursor), error };
  }

  private io(): Abortable {
    return this.options.abortSignal === undefined ? {} : { abortSignal: this.options.abortSignal };
  }
}
