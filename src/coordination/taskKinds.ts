import type { z } from "zod";

/**
 * A pluggable task kind: how to process one item's input into a partial result, and how to merge partial results.
 * `merge` must be associative and commutative with `empty()` as identity, so results can fold in any order and the
 * aggregate never depends on which worker, leader or retry produced what.
 */
export interface TaskKind<Params, Partial> {
  /** The `kind` named in job submissions. */
  readonly name: string;
  /** Validates the job's `params` (a submission with bad params gets a 400 naming the field). */
  readonly paramsSchema: z.ZodType<Params>;
  /** Validates a partial result read back from a queue or state (never trust storage blindly). */
  readonly partialSchema: z.ZodType<Partial>;
  /** Turns one item's input text into a partial result. Throws `ItemError` for bad input (no retry helps). */
  process(input: string, params: Params): Partial;
  /** Combines two partial results. */
  merge(a: Partial, b: Partial): Partial;
  /** The identity of `merge`. */
  empty(): Partial;
  /** The aggregate as users read it (in job status and the final result). @default the partial itself */
  view?(partial: Partial): unknown;
  /**
   * How many groups (entries) a partial holds; the leader fails a job whose aggregate would exceed
   * `MAX_AGGREGATE_GROUPS`. @default the length of an array, the number of keys of an object, otherwise 1
   */
  size?(partial: Partial): number;
}

/** The size of a partial as `kind` measures it (see {@link TaskKind.size}). */
export function partialSize<P>(kind: TaskKind<unknown, P>, partial: P): number {
  if (kind.size !== undefined) return kind.size(partial);
  if (Array.isArray(partial)) return partial.length;
  if (typeof partial === "object" && partial !== null) return Object.keys(partial).length;
  return 1;
}

/**
 * Merges many partials in a balanced tree of `merge` calls, so each level handles every entry once: log2(n) levels,
 * not n merges into an ever larger result. `empty()` when there are none.
 */
export function mergeAll<P>(kind: TaskKind<unknown, P>, partials: readonly P[]): P {
  let level = [...partials];
  if (level.length === 0) return kind.empty();
  while (level.length > 1) {
    const next: P[] = [];
    for (let index = 0; index < level.length; index += 2) {
      const [a, b] = [level[index] as P, level[index + 1]];
      next.push(b === undefined ? a : kind.merge(a, b));
    }
    level = next;
  }
  return level[0] as P;
}

/**
 * Merges partials as they arrive, in the balanced shape of {@link mergeAll} (a binary counter of merged runs): it
 * holds at most ⌈log2 n⌉ + 1 partials after n, never all n, so a unit of many items costs the worker the memory of
 * its merged result, not of every item's partial.
 */
export class PartialMerger<P> {
  /** `runs[k]`: the merge of 2^k partials, or undefined. */
  private readonly runs: (P | undefined)[] = [];
  private added = 0;

  constructor(private readonly kind: TaskKind<unknown, P>) {}

  /** Partials added so far. */
  get count(): number {
    return this.added;
  }

  add(partial: P): void {
    let carry = partial;
    let level = 0;
    for (let run = this.runs[level]; run !== undefined; run = this.runs[level]) {
      carry = this.kind.merge(run, carry);
      this.runs[level] = undefined;
      level++;
    }
    this.runs[level] = carry;
    this.added++;
  }

  /** The merge of every partial added; `empty()` when there were none. */
  result(): P {
    let merged: P | undefined;
    for (const run of this.runs)
      if (run !== undefined) merged = merged === undefined ? run : this.kind.merge(run, merged);
    return merged ?? this.kind.empty();
  }
}

/** A task kind with its types erased, as the registry holds it. */
export type AnyTaskKind = TaskKind<unknown, unknown>;

/** The input of one item is unusable: retrying cannot help. The item is recorded as failed with this reason. */
export class ItemError extends Error {
  readonly code = "InvalidItem";
  constructor(message: string) {
    super(message);
    this.name = "ItemError";
  }
}

/** Task kinds by name. */
export class TaskRegistry {
  private readonly kinds = new Map<string, AnyTaskKind>();

  /** Adds a kind. @throws Error when the name is taken. */
  register<P, R>(kind: TaskKind<P, R>): this {
    if (this.kinds.has(kind.name)) throw new Error(`Task kind "${kind.name}" is already registered.`);
    this.kinds.set(kind.name, kind);
    return this;
  }

  /** The kind, or undefined. */
  get(name: string): AnyTaskKind | undefined {
    return this.kinds.get(name);
  }

  /** Registered names, for error messages. */
  names(): string[] {
    return [...this.kinds.keys()];
  }
}
