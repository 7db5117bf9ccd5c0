import fc from "fast-check";
import type { FaultKind } from "./plan";

/**
 * Issue 37.2's model: jobs whose items are stored in several chunks of mixed sizes — small first then large, large
 * then small, alternating, or any mix — so the leader's reads ahead meet every mix. The product's own options make a
 * few dozen items several chunks: the submission's `chunkSize` (internal, 1–3 items here) and the chunk cache's
 * `largeChunkChars` (internal, {@link SIM_LARGE_CHUNK_CHARS} here instead of 1 MiB), so a chunk is large at a few
 * hundred characters and runs stay small and fast. Kept in one field of the plan, `chunkMix`, generated after every
 * earlier field.
 */
export interface ChunkMixPlan {
  /** Per job of the plan (by its index; a burst's jobs keep the product's chunking): how its items are stored. */
  jobs: ChunkedJob[];
}

/** How one job's items are stored. */
export interface ChunkedJob {
  /** Items per chunk. */
  chunkSize: number;
  /** Per chunk (the first 16): whether its usable items are padded to be large. */
  large: boolean[];
  /** Per item (the first 16): the characters a padded item's input has, about. */
  itemChars: number[];
  /** What made `large` (for people reading a shrunk plan). */
  shape: "smallThenLarge" | "largeThenSmall" | "alternating" | "any";
}

/** The fault (in `--faults`) that switches the model on. */
export const CHUNK_FAULTS = ["chunkMix"] as const;

/**
 * The simulation's large-chunk threshold, in characters of chunk text: a chunk of 1–3 unpadded items (at most about 40
 * characters each) stays below it, one padded item (300–1,000 characters) takes its chunk above it. The cache then
 * promises at most 16 × 128 = 2,048 characters of small chunks besides its one large chunk.
 */
export const SIM_LARGE_CHUNK_CHARS = 128;

const MAX_CHUNKS = 16;

function shaped(shape: ChunkedJob["shape"], first: number): fc.Arbitrary<boolean[]> {
  const of = (large: (chunk: number) => boolean): fc.Arbitrary<boolean[]> =>
    fc.constant(Array.from({ length: MAX_CHUNKS }, (_, chunk) => large(chunk)));
  switch (shape) {
    case "smallThenLarge":
      return of((chunk) => chunk >= first);
    case "largeThenSmall":
      return of((chunk) => chunk < first);
    case "alternating":
      return of((chunk) => chunk % 2 === first % 2);
    case "any":
      return fc.array(fc.boolean(), { minLength: MAX_CHUNKS, maxLength: MAX_CHUNKS });
  }
}

const chunkedJobArb: fc.Arbitrary<ChunkedJob> = fc
  .record({
    chunkSize: fc.integer({ min: 1, max: 3 }),
    shape: fc.constantFrom<ChunkedJob["shape"]>("smallThenLarge", "largeThenSmall", "alternating", "any"),
    first: fc.integer({ min: 1, max: 3 }),
    itemChars: fc.array(fc.integer({ min: 300, max: 1000 }), { minLength: MAX_CHUNKS, maxLength: MAX_CHUNKS }),
  })
  .chain(({ chunkSize, shape, first, itemChars }) =>
    shaped(shape, first).map((large) => ({ chunkSize, large, itemChars, shape })),
  );

/** The arbitrary of the model, with only the faults in `faults`. */
export function chunkMixArb(faults: ReadonlySet<FaultKind>): fc.Arbitrary<ChunkMixPlan> {
  return faults.has("chunkMix")
    ? fc.record({ jobs: fc.array(chunkedJobArb, { minLength: 3, maxLength: 3 }) })
    : fc.constant({ jobs: [] });
}

/** The padding of item `index` of a job stored as `chunked` (0: none), for a usable item. */
export function padOf(chunked: ChunkedJob | undefined, index: number): number {
  if (chunked === undefined) return 0;
  const large = chunked.large[Math.floor(index / chunked.chunkSize)] ?? false;
  return large ? (chunked.itemChars[index % MAX_CHUNKS] ?? 300) : 0;
}
