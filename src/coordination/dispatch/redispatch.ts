import type { Abortable } from "../../library/util/delay.js";
import { Bitmap } from "../state/bitmap.js";
import type { ChunkCache } from "./chunkCache.js";
import type { CoordinationDeps } from "../deps.js";
import type { Versioned } from "../../library/fencing/FencedStateStore.js";
import type { JobState } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";
import { packUnits } from "./packUnits.js";

/** Work messages sent at once. */
const SEND_GROUP = 64;

/** What {@link redispatchInFlight} sent again. */
export interface RedispatchReport {
  /** Units sent again. */
  units: number;
  /** Items in them. */
  items: number;
}

/**
 * Most times one job's units in flight are sent again after lapsed terms. A unit that kills the process that takes it
 * (out of memory, a native crash) would otherwise be sent again, with a fresh delivery count, after every leader it
 * took down; past this many, a job's stranded units wait for the host's visibility timeout as they always did, and such
 * a unit reaches the poison queue after its deliveries.
 */
export const MAX_REDISPATCHES = 3;

/** What {@link redispatchAfterLapse} did, and the job as it is now. */
export interface RedispatchOutcome extends RedispatchReport {
  job: Versioned<JobState>;
}

/**
 * For a term whose predecessor's lease lapsed (`term.previousEnd`: a crash, a freeze, a takeover): sends the job's
 * units in flight again ({@link redispatchInFlight}), after counting it in the job's state (`redispatches`, at most
 * {@link MAX_REDISPATCHES}, counted before sending so that a crash caused by the units themselves cannot repeat it
 * without end). Not for a job registered before units had stored limits: its units were packed by other rules, and a
 * unit packed again differently would overlap one still in flight (folding would fail the items it cannot count).
 */
export async function redispatchAfterLapse(
  deps: CoordinationDeps,
  jobs: JobStore,
  job: Versioned<JobState>,
  options: Abortable & { chunks: ChunkCache },
): Promise<RedispatchOutcome> {
  const state = job.value;
  const none = { units: 0, items: 0, job };
  if (state.status !== "running" || state.unitMaxItems === undefined || state.unitMaxBytes === undefined) return none;
  if ((state.redispatches ?? 0) >= MAX_REDISPATCHES) return none;
  if (state.dispatched - state.doneCount - state.failedCount <= 0) return none; // nothing in flight
  const io: Abortable = options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal };
  const counted = await jobs.updateJob(
    state.id,
    (current) =>
      current.status === "running" ? { ...current, redispatches: (current.redispatches ?? 0) + 1 } : undefined,
    io,
    job,
  );
  if (counted === undefined || counted.value.status !== "running") return { ...none, job: counted ?? job };
  return { ...(await redispatchInFlight(deps, counted.value, options)), job: counted };
}

/**
 * Sends again, at once, the units of a job that were sent and have no result yet — for a term whose predecessor's
 * lease lapsed (`term.previousEnd`: a crash, a freeze, a takeover). Such units may be held by the process that died:
 * the Functions host keeps a message it received invisible for 10 minutes (renewed while its function runs), so the
 * queue hands a dead process's messages out again only then ([azure-webjobs-sdk#1040](https://github.com/Azure/azure-webjobs-sdk/issues/1040)),
 * and the job waits. Which units a dead process held is not known here, so every unit in flight is sent again: a unit
 * a live worker is still running is processed twice, and folding counts it once (its items' bits; a kind names its
 * outputs after the idempotency key). Every unit in flight, however many: what dispatch allows a job to have out — its
 * window of `maxInFlight` items, the last unit past it by less than a unit, and at a job's end its tail of at most half
 * the window (`dispatch.ts`) — so up to about 1.5 × `maxInFlight` items; a unit left out would wait for the host's
 * 10 minutes, which is what this is for. Messages are sent in groups of {@link SEND_GROUP}: at most that many are held.
 *
 * The units are found from the job's bits alone: a unit's result sets all of its items at once, and an item that
 * could not be sent ended its unit, so every run of items below the cursor with neither bit set starts at a unit's
 * first item and ends at a unit's end; packing again from there gives the units that were sent ({@link packUnits}).
 * An item that can no longer be read (its chunk gone since) ends its run unsent: the first copy is still out there.
 */
export async function redispatchInFlight(
  deps: CoordinationDeps,
  state: JobState,
  options: Abortable & { chunks: ChunkCache },
): Promise<RedispatchReport> {
  const report: RedispatchReport = { units: 0, items: 0 };
  if (state.status !== "running" || state.dispatched - state.doneCount - state.failedCount <= 0) return report;
  const io: Abortable = options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal };
  let messages: string[] = [];
  const flush = async (): Promise<void> => {
    if (messages.length === 0) return;
    await deps.workQueue.send(messages, io);
    messages = [];
  };
  for (const [from, end] of unfinishedRuns(state)) {
    for await (const piece of packUnits(deps, state, { from, until: end, end, chunks: options.chunks, ...io })) {
      if (piece.kind === "unsendable") break;
      messages.push(piece.message);
      report.units++;
      report.items += piece.count;
      if (messages.length >= SEND_GROUP) await flush();
    }
  }
  await flush();
  return report;
}

/** The runs `[from, end)` of items below the job's cursor with neither a done nor a failed bit, in order. */
export function unfinishedRuns(
  state: Pick<JobState, "doneBits" | "failedBits" | "itemCount" | "dispatched">,
): [number, number][] {
  const done = Bitmap.fromBase64(state.doneBits, state.itemCount);
  const failed = Bitmap.fromBase64(state.failedBits, state.itemCount);
  const runs: [number, number][] = [];
  let start: number | undefined;
  for (let item = 0; item < state.dispatched; item++) {
    const open = !done.has(item) && !failed.has(item);
    if (open) start ??= item;
    else if (start !== undefined) {
      runs.push([start, item]);
      start = undefined;
    }
  }
  if (start !== undefined) runs.push([start, state.dispatched]);
  return runs;
}
