import type { ChunkCacheOptions, CoordinationDeps, HeldChunks } from "../deps.js";
import { chunkSchema } from "../state/jobState.js";
import { describeIssues } from "../ports/messages.js";
import type { Abortable } from "../../library/util/delay.js";

/** A chunk's entries, or why there are none. */
export type ChunkRead = { ok: true; entries: unknown[] } | { ok: false; reason: string };

/**
 * Chunks already read, by blob name, for the passes of one step: a 1,000-item chunk feeds several dispatches when
 * each sends only part of it, and chunks never change once stored. Keeps the last {@link CACHED_CHUNKS} read, and at
 * most {@link CACHED_CHUNK_BYTES} of their text, of which at most ONE large chunk (over
 * {@link PREFETCH_MAX_CHUNK_BYTES}: reading another large one drops it; one over {@link CACHED_CHUNK_BYTES}, up to
 * 40 MB of large inline items, is not kept at all). Small chunks can be read ahead ({@link ChunkCache.prefetch}): a
 * later `read` of the same chunk takes that read. Large chunks are read one at a time, when they are needed, and the
 * leader holds one: what it holds is at most {@link SMALL_CHUNKS_HELD_BYTES} of small chunks and one large chunk, for
 * any mix of sizes ({@link ChunkCache.heldBytes} counts it). The threshold is {@link PREFETCH_MAX_CHUNK_BYTES} unless
 * an internal option scales it (`largeChunkChars`: the simulator's small jobs).
 */
export class ChunkCache implements HeldChunks {
  private readonly chunks = new Map<string, LoadedChunk>();
  /** Reads started ahead, not taken yet; none rejects (a failure is kept, and thrown by the `read` that takes it). */
  private readonly ahead = new Map<string, AheadRead>();
  /** Text of the chunks kept, of the reads ahead that have ended and wait to be taken, and of the chunk handed out. */
  private bytes = 0;
  private aheadBytes = 0;
  private inHand: { name: string; bytes: number } | undefined;
  private peak = 0;
  /** The chunk a `read` waits for, not read ahead (or taken from a read ahead that had not ended). */
  private readingNow: string | undefined;
  readonly largeChunkChars: number;

  constructor(options: ChunkCacheOptions = {}) {
    this.largeChunkChars = options.largeChunkChars ?? PREFETCH_MAX_CHUNK_BYTES;
    options.watch?.(this);
  }

  /** Most text of small chunks held besides one large chunk ({@link SMALL_CHUNKS_HELD_BYTES} by default). */
  get smallChunksHeldBytes(): number {
    return (CACHED_CHUNKS + PREFETCH_CHUNKS) * this.largeChunkChars;
  }

  /** The chunks {@link heldBytes} counts, by blob name. */
  get held(): string[] {
    const names = [...this.chunks.keys()];
    for (const [name, entry] of this.ahead) if (entry.heldBytes > 0) names.push(name);
    if (this.inHand !== undefined && !this.chunks.has(this.inHand.name)) names.push(this.inHand.name);
    return names;
  }

  /** The chunk reads this cache waits for now: reads ahead not yet ended, and the one a `read` waits for. */
  get reading(): string[] {
    const names = [...this.ahead].filter(([, entry]) => !entry.ended).map(([name]) => name);
    return this.readingNow === undefined ? names : [...names, this.readingNow];
  }

  /**
   * Chunk text this cache holds now, in bytes (UTF-16 code units, as read): the chunks it keeps, the reads ahead that
   * have ended and wait to be taken, and the chunk it last handed out when it does not keep it (its reader holds it
   * until it asks for the next).
   */
  get heldBytes(): number {
    const hand = this.inHand === undefined || this.chunks.has(this.inHand.name) ? 0 : this.inHand.bytes;
    return this.bytes + this.aheadBytes + hand;
  }

  /** The most {@link heldBytes} has been since this cache was made. */
  get peakHeldBytes(): number {
    return this.peak;
  }

  private noteHeld(): void {
    this.peak = Math.max(this.peak, this.heldBytes);
  }

  /**
   * A chunk's entries (or why there are none), and the length of its text. `chars`: the length the job recorded for it
   * (undefined: not known); a chunk that may be large is read only once the large chunk kept before is let go.
   */
  async read(
    deps: CoordinationDeps,
    name: string,
    chars: number | undefined,
    options: Abortable,
  ): Promise<LoadedChunk> {
    const cached = this.chunks.get(name);
    if (cached !== undefined) {
      this.inHand = { name, bytes: cached.bytes };
      return cached;
    }
    this.inHand = undefined; // its reader lets it go to read this one
    if (chars === undefined || chars > this.largeChunkChars) this.dropLarge();
    const started = this.ahead.get(name);
    if (started !== undefined) this.dropAhead(name, started);
    let loaded: LoadedChunk;
    this.readingNow = started?.ended === true ? undefined : name;
    try {
      if (started === undefined) loaded = await readChunk(deps, name, options);
      else {
        const outcome = await started.outcome;
        if (!outcome.ok) throw outcome.error;
        loaded = outcome.value;
      }
    } finally {
      this.readingNow = undefined;
    }
    // One large chunk at a time: the one read before goes, kept or not.
    if (loaded.bytes > this.largeChunkChars) this.dropLarge();
    this.inHand = { name, bytes: loaded.bytes };
    if (loaded.bytes <= CACHED_CHUNK_BYTES) {
      this.chunks.set(name, loaded);
      this.bytes += loaded.bytes;
      for (const [oldest, entry] of this.chunks) {
        if (this.chunks.size <= CACHED_CHUNKS && this.bytes <= CACHED_CHUNK_BYTES) break;
        this.chunks.delete(oldest);
        this.bytes -= entry.bytes;
      }
    }
    this.noteHeld();
    return loaded;
  }

  /**
   * Starts reading a small chunk ahead, for a later {@link ChunkCache.read}, given the length of its text as the job
   * recorded it (`chunkChars`; undefined: not known). Returns false, and reads nothing, for a chunk that is large
   * (over {@link PREFETCH_MAX_CHUNK_BYTES}) or of unknown size: the caller stops reading ahead there. At most
   * {@link PREFETCH_CHUNKS} reads are kept ahead: a new one drops the oldest (a packing that stopped early leaves
   * some).
   */
  prefetch(deps: CoordinationDeps, name: string, chars: number | undefined, options: Abortable): boolean {
    if (chars === undefined || chars > this.largeChunkChars) return false;
    if (this.chunks.has(name) || this.ahead.has(name)) return true;
    for (const [oldest, entry] of this.ahead) {
      if (this.ahead.size < PREFETCH_CHUNKS) break;
      this.dropAhead(oldest, entry);
    }
    const entry: AheadRead = {
      heldBytes: 0,
      ended: false,
      outcome: readChunk(deps, name, options).then(
        (value) => {
          entry.ended = true;
          // Held from now until a read takes it (unless one already has, and waited for it, or it was dropped).
          if (this.ahead.get(name) === entry) {
            entry.heldBytes = value.bytes;
            this.aheadBytes += value.bytes;
            this.noteHeld();
          }
          return { ok: true as const, value };
        },
        (error: unknown) => {
          entry.ended = true;
          return { ok: false as const, error };
        },
      ),
    };
    this.ahead.set(name, entry);
    return true;
  }

  /** Lets go of the large chunk kept, if any. */
  private dropLarge(): void {
    for (const [name, entry] of this.chunks)
      if (entry.bytes > this.largeChunkChars) {
        this.chunks.delete(name);
        this.bytes -= entry.bytes;
      }
  }

  /** Forgets a read ahead: taken by a read, or dropped. */
  private dropAhead(name: string, entry: AheadRead): void {
    this.ahead.delete(name);
    this.aheadBytes -= entry.heldBytes;
    entry.heldBytes = 0;
  }
}

/** A read started ahead: its outcome, whether it has ended; once ended, the bytes it holds until a read takes it. */
interface AheadRead {
  outcome: Promise<{ ok: true; value: LoadedChunk } | { ok: false; error: unknown }>;
  heldBytes: number;
  ended: boolean;
}

/** A chunk as read: its entries or why there are none, and the length of its text. */
export interface LoadedChunk {
  read: ChunkRead;
  bytes: number;
}

/**
 * Chunks read ahead of the one being packed, as long as each is known to be small — its text at most
 * {@link PREFETCH_MAX_CHUNK_BYTES}, by the job's recorded `chunkChars` —: a pass of 8,192 small items spans 9 chunks,
 * and reading them one after the other held the first send back by 9 round trips (issue 24's slow rounds). Large
 * chunks, and chunks of a job that recorded no sizes, are read one at a time when needed. Until issue 37 the choice
 * was made from the size of the chunk just read, so a job whose first chunk was small had its next large ones (up to
 * 8 × 40 MB) read at once and held.
 */
export const PREFETCH_CHUNKS = 8;
export const PREFETCH_MAX_CHUNK_BYTES = 1024 * 1024;

/** Most chunks a {@link ChunkCache} keeps: two per job for a few active jobs. */
const CACHED_CHUNKS = 8;
/** Most chunk text a {@link ChunkCache} keeps, in bytes (UTF-16 code units, as read). */
const CACHED_CHUNK_BYTES = 16 * 1024 * 1024;

/**
 * Most text of small chunks a {@link ChunkCache} holds, kept and read ahead (16 MiB); besides them it holds one large
 * chunk at most, so a leader's chunk text stays within this plus the largest chunk of the jobs it works on (1,000
 * items of up to 40 KiB: about 41 MB).
 */
export const SMALL_CHUNKS_HELD_BYTES = (CACHED_CHUNKS + PREFETCH_CHUNKS) * PREFETCH_MAX_CHUNK_BYTES;

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
