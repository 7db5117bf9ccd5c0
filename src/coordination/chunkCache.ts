import type { CoordinationDeps } from "./deps.js";
import { chunkSchema } from "./jobState.js";
import { describeIssues } from "./messages.js";
import type { Abortable } from "../library/util/delay.js";

/** A chunk's entries, or why there are none. */
export type ChunkRead = { ok: true; entries: unknown[] } | { ok: false; reason: string };

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
export interface LoadedChunk {
  read: ChunkRead;
  bytes: number;
}

/**
 * Chunks read ahead of the one being packed, while that one's text is at most {@link PREFETCH_MAX_CHUNK_BYTES}: a pass
 * of 8,192 small items spans 9 chunks, and reading them one after the other held the first send back by 9 round trips
 * (issue 24's slow rounds). Chunks of large items are read one at a time, as before, so the leader holds one of them.
 */
export const PREFETCH_CHUNKS = 8;
export const PREFETCH_MAX_CHUNK_BYTES = 1024 * 1024;

/** Most chunks a {@link ChunkCache} keeps: two per job for a few active jobs. */
const CACHED_CHUNKS = 8;
/** Most chunk text a {@link ChunkCache} keeps, in bytes (UTF-16 code units, as read). */
const CACHED_CHUNK_BYTES = 16 * 1024 * 1024;

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
