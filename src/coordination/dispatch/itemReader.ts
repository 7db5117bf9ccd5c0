import type { Abortable } from "../../library/util/delay.js";
import type { CoordinationDeps } from "../deps.js";
import { describeIssues, itemInputSchema, type ItemInput } from "../ports/messages.js";
import { chunkCharsOf, keys, type JobState } from "../state/jobState.js";
import type { ChunkCache, ChunkRead } from "./chunkCache.js";

/** An item's input as stored, with its bytes as a work message carries it (and a comma); or why it cannot be sent. */
export type ReadItem = { ok: true; input: ItemInput; bytes: number } | { ok: false; reason: string };

/**
 * A job's items one at a time, in any order (mostly forward), through a step's chunk cache: a limited job's dispatch
 * reads the items of the units it sends again as well as the next ones. A chunk is read when an item of it is first
 * wanted and held until another chunk is.
 */
export class ItemReader {
  private chunkIndex = -1;
  private chunk: ChunkRead = { ok: true, entries: [] };

  constructor(
    private readonly deps: CoordinationDeps,
    private readonly state: JobState,
    private readonly chunks: ChunkCache,
    private readonly io: Abortable,
  ) {}

  /** Item `item`'s input, or why it cannot be sent (its chunk missing or corrupt, its entry not an item input). */
  async at(item: number): Promise<ReadItem> {
    const { state } = this;
    const wanted = Math.floor(item / state.chunkSize);
    if (wanted !== this.chunkIndex) {
      this.chunkIndex = wanted;
      this.chunk = { ok: true, entries: [] }; // the chunk done with is let go before the next is read
      const name = keys.chunk(state.id, wanted);
      this.chunk = (await this.chunks.read(this.deps, name, chunkCharsOf(state, wanted), this.io)).read;
    }
    if (!this.chunk.ok) return { ok: false, reason: this.chunk.reason };
    const entry = item % state.chunkSize;
    const where = `its chunk "${keys.chunk(state.id, wanted)}"`;
    if (entry >= this.chunk.entries.length)
      return { ok: false, reason: `${where} has ${this.chunk.entries.length} entries; entry ${entry} is missing` };
    const input = itemInputSchema.safeParse(this.chunk.entries[entry]);
    if (!input.success)
      return { ok: false, reason: `entry ${entry} of ${where} is not an item input: ${describeIssues(input.error)}` };
    return { ok: true, input: input.data, bytes: Buffer.byteLength(JSON.stringify(input.data)) + 1 };
  }
}
