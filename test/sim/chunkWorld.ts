import type { ChunkCacheOptions, HeldChunks } from "../../src/coordination/deps";
import { SIM_LARGE_CHUNK_CHARS } from "./chunkMix";
import type { SimProcess } from "./network";
import type { SimWorld } from "./world";

/** Issue 37.2's invariant, by name (the model is in `chunkMix.ts`). */
export const CHUNK_INVARIANTS = {
  leaderHeldChunkBytes:
    "a leader's process never holds more item-chunk text than its chunk cache promises (chunkCache.ts): at most ONE large chunk (over the threshold, 1 MiB; 128 characters with chunkMix) and 16 × the threshold of small ones, counting the chunks its step keeps, reads ahead ended and not taken, the chunk in hand, and the chunk reads it waits for, each at its size in storage",
} as const;
export type ChunkInvariantName = keyof typeof CHUNK_INVARIANTS;

/**
 * What the leaders' chunk caches hold (each step's cache, watched through the internal `chunkCache.watch` option).
 */
export class SimChunks {
  private readonly caches = new Map<SimProcess, HeldChunks[]>();

  constructor(private readonly world: SimWorld) {}

  /** The app's internal chunk-cache options for one instance's process. */
  optionsFor(process: SimProcess): ChunkCacheOptions {
    return {
      ...(this.world.plan.chunkMix.jobs.length > 0 ? { largeChunkChars: SIM_LARGE_CHUNK_CHARS } : {}),
      watch: (cache) => {
        const list = this.caches.get(process) ?? [];
        list.push(cache);
        this.caches.set(process, list);
      },
    };
  }

  /** A step ended: what its cache held is let go (a step's cache lives as long as the step). */
  onStepEnd(process: SimProcess): void {
    this.caches.delete(process);
  }

  /**
   * What each process's step caches hold now (chunks held and chunk reads waited for, each at its size in storage:
   * the check does not rely on the caches' own byte counts), per process.
   */
  *held(systemContainer: string): Generator<{ process: SimProcess; held: Held }> {
    const blobs = this.world.account.containers.get(systemContainer)?.blobs;
    for (const [process, caches] of this.caches) {
      const first = caches[0];
      if (process.crashed || first === undefined) continue;
      const sized = (name: string, reading: boolean): HeldChunk => ({
        name,
        chars: blobs?.get(name)?.text.length ?? 0,
        reading,
      });
      const chunks = caches.flatMap((cache) => [
        ...cache.held.map((name) => sized(name, false)),
        ...cache.reading.map((name) => sized(name, true)),
      ]);
      const large = chunks.filter((chunk) => chunk.chars > first.largeChunkChars);
      const smallChars = chunks.reduce(
        (sum, chunk) => sum + (chunk.chars > first.largeChunkChars ? 0 : chunk.chars),
        0,
      );
      yield {
        process,
        held: {
          chunks,
          large,
          smallChars,
          totalChars: chunks.reduce((sum, chunk) => sum + chunk.chars, 0),
          smallAllowance: first.smallChunksHeldBytes,
          threshold: first.largeChunkChars,
        },
      };
    }
  }
}

/** A chunk a process holds, or waits for, at its size in storage (characters of JSON). */
interface HeldChunk {
  name: string;
  chars: number;
  reading: boolean;
}

/** What one process holds at a moment. */
export interface Held {
  chunks: HeldChunk[];
  /** Those over the threshold. */
  large: HeldChunk[];
  smallChars: number;
  totalChars: number;
  /** The cache's promise for small chunks: 16 × the threshold. */
  smallAllowance: number;
  threshold: number;
}

/** Checks `leaderHeldChunkBytes` after every step of the run; one violation per process at most. */
export class ChunkChecks {
  private readonly reported = new Set<SimProcess>();

  constructor(
    private readonly world: SimWorld,
    private readonly chunks: SimChunks,
    private readonly fail: (invariant: ChunkInvariantName, message: string) => void,
  ) {}

  afterStep(): void {
    for (const { process, held } of this.chunks.held(this.world.containers.system)) {
      if ((held.large.length <= 1 && held.smallChars <= held.smallAllowance) || this.reported.has(process)) continue;
      this.reported.add(process);
      const step = this.world.history.steps.find((s) => s.process === process && s.endMs === undefined);
      const list = (chunks: HeldChunk[]): string =>
        chunks
          .map((chunk) => `${chunk.name.replace(/^jobs\//, "")} ${chunk.chars}${chunk.reading ? " (being read)" : ""}`)
          .join(", ");
      const largest = Math.max(0, ...held.large.map((chunk) => chunk.chars));
      this.fail(
        "leaderHeldChunkBytes",
        `${process.name}${step === undefined ? "" : ` (epoch ${step.epoch})`} held ${held.totalChars} characters of item chunks, ${held.large.length} large chunk(s) among them (over ${held.threshold}: ${list(held.large)}) and ${held.smallChars} of small ones; the cache promises at most one large chunk besides at most ${held.smallAllowance} characters of small ones (${held.smallAllowance + largest} in all with the largest held)`,
      );
    }
  }
}
