import type { Abortable } from "../../library/util/delay.js";
import { PREFETCH_CHUNKS, type ChunkCache, type ChunkRead } from "./chunkCache.js";
import type { CoordinationDeps } from "../deps.js";
import { chunkCharsOf, keys, type JobState } from "../state/jobState.js";
import {
  describeIssues,
  itemInputSchema,
  MAX_WORK_MESSAGE_BYTES,
  type ItemInput,
  type UnitWorkMessage,
} from "../ports/messages.js";

/** One piece of a job's items as they are packed: a unit to send, or an item that cannot be sent, with why. */
export type Packed =
  | { kind: "unit"; first: number; count: number; message: string }
  | { kind: "unsendable"; item: number; reason: string };

/** Where {@link packUnits} starts and stops. */
export interface PackRange extends Abortable {
  /** The first item: a unit boundary (a job's cursor, or the first item of a unit sent before). */
  from: number;
  /**
   * No unit starts at or after this item; one started before it runs on until it is full (as dispatch's budget is
   * counted). An item that cannot be sent is reported only before it, or when it ends a unit that was open.
   */
  until: number;
  /** No item at or after this one is packed: a unit still open there ends there. @default the job's item count */
  end?: number;
  /** Chunks read by earlier packings of the same step. */
  chunks: ChunkCache;
}

/** How a job's items are packed into units: fixed when the job registers, so a unit's boundaries never change. */
export function unitLimits(
  deps: Pick<CoordinationDeps, "workUnitMaxItems" | "workUnitMaxBytes">,
  state: Pick<JobState, "unitMaxItems" | "unitMaxBytes">,
): { items: number; bytes: number } {
  return { items: state.unitMaxItems ?? deps.workUnitMaxItems, bytes: state.unitMaxBytes ?? deps.workUnitMaxBytes };
}

/**
 * Packs a job's items into units, as dispatch sends them: contiguous, greedily from `from`, each with at most the
 * job's `unitMaxItems` items and `unitMaxBytes` bytes of JSON; an item whose input cannot be read (its chunk missing or
 * corrupt, its entry not an item input) or that would not fit a message on its own ends the unit before it and is
 * reported instead. Since every unit starts where the one before ended (or after such an item), packing again from a
 * unit's first item gives the same unit: a unit re-sent is the unit sent, which folding relies on. Lazy: a chunk is
 * read when the next item needs it (and up to {@link PREFETCH_CHUNKS} after it are read ahead, while the job's recorded
 * sizes say they are small).
 */
export async function* packUnits(
  deps: CoordinationDeps,
  state: JobState,
  range: PackRange,
): AsyncGenerator<Packed, void, undefined> {
  const { from, until, chunks } = range;
  const end = Math.min(range.end ?? state.itemCount, state.itemCount);
  const io: Abortable = range.abortSignal === undefined ? {} : { abortSignal: range.abortSignal };
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
  const closed = (unit: { first: number; inputs: ItemInput[] }): Packed => ({
    kind: "unit",
    first: unit.first,
    count: unit.inputs.length,
    message: JSON.stringify({
      v: 2,
      jobId: state.id,
      first: unit.first,
      kind: state.kind,
      params: state.params,
      inputs: unit.inputs,
    } satisfies UnitWorkMessage),
  });
  let unit: { first: number; inputs: ItemInput[]; bytes: number } | undefined;
  let chunkIndex = -1;
  let chunk: ChunkRead = { ok: true, entries: [] };
  // The last chunk this packing may need: the last unit may run past `until` by less than a unit.
  const lastChunk = Math.floor((Math.min(end, until + limits.items) - 1) / state.chunkSize);
  for (let item = from; item < end && (item < until || unit !== undefined); item++) {
    const wanted = Math.floor(item / state.chunkSize);
    if (wanted !== chunkIndex) {
      chunkIndex = wanted;
      chunk = { ok: true, entries: [] }; // the chunk done with is let go before the next is read
      const loaded = await chunks.read(deps, keys.chunk(state.id, chunkIndex), chunkCharsOf(state, chunkIndex), io);
      chunk = loaded.read;
      // The next chunks, while each is known to be small: a large one is read when it is needed, alone.
      for (let next = chunkIndex + 1; next <= Math.min(lastChunk, chunkIndex + PREFETCH_CHUNKS); next++)
        if (!chunks.prefetch(deps, keys.chunk(state.id, next), chunkCharsOf(state, next), io)) break;
    }
    const entry = item % state.chunkSize;
    const input = chunk.ok ? itemInputSchema.safeParse(chunk.entries[entry]) : undefined;
    const bytes = input?.success === true ? Buffer.byteLength(JSON.stringify(input.data)) + 1 : 0;
    if (input?.success === true && envelopeBytes + bytes <= MAX_WORK_MESSAGE_BYTES) {
      if (unit !== undefined && envelopeBytes + unit.bytes + bytes > limits.bytes) {
        yield closed(unit);
        unit = undefined;
        if (item >= until) return; // this item starts the next unit, in a later packing
      }
      unit ??= { first: item, inputs: [], bytes: 0 };
      unit.inputs.push(input.data);
      unit.bytes += bytes;
      if (unit.inputs.length >= limits.items) {
        yield closed(unit);
        unit = undefined;
      }
      continue;
    }
    if (unit !== undefined) {
      yield closed(unit);
      unit = undefined;
    }
    const where = `its chunk "${keys.chunk(state.id, chunkIndex)}"`;
    const reason = !chunk.ok
      ? chunk.reason
      : entry >= chunk.entries.length
        ? `${where} has ${chunk.entries.length} entries; entry ${entry} is missing`
        : input?.success === true
          ? `its work message would be ${envelopeBytes + bytes} bytes of JSON, more than a queue message holds (${MAX_WORK_MESSAGE_BYTES} bytes); put large inputs in a blob`
          : `entry ${entry} of ${where} is not an item input: ${input === undefined ? "" : describeIssues(input.error)}`;
    yield { kind: "unsendable", item, reason };
  }
  if (unit !== undefined) yield closed(unit);
}
