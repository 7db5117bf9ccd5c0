import type { Abortable } from "../library/util/delay";
import { Bitmap } from "./bitmap";
import type { ChunkCache } from "./chunkCache";
import type { CoordinationDeps } from "./deps";
import type { JobState } from "./jobState";
import { packUnits } from "./packUnits";

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
 * Sends again, at once, the units of a job that were sent and have no result yet — for a term whose predecessor's
 * lease lapsed (`term.previousEnd`: a crash, a freeze, a takeover). Such units may be held by the process that died:
 * the Functions host keeps a message it received invisible for 10 minutes (renewed while its function runs), so the
 * queue hands a dead process's messages out again only then ([azure-webjobs-sdk#1040](https://github.com/Azure/azure-webjobs-sdk/issues/1040)),
 * and the job waits. Which units a dead process held is not known here, so every unit in flight is sent again: a unit
 * a live worker is still running is processed twice, and folding counts it once (its items' bits; a kind names its
 * outputs after the idempotency key). At most `maxInFlight` items, once per crash.
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
    if (report.items >= deps.maxInFlight) break;
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
