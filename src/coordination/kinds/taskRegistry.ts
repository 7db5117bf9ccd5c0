import { ConfigurationError } from "../../library/errors.js";
import { issuesText, validateWith, type SchemaIssue, type Validated } from "./standardSchema.js";
import type { TaskContext, TaskInput, TaskKind } from "./taskKinds.js";
import { kindLimitsOf, kindLimitsProblems, problemsText, type KindLimits } from "./kindLimits.js";

/** A task kind's name as messages carry it: 1–64 letters, digits, `.`, `_` or `-`. */
const KIND_NAME = /^[\w.-]{1,64}$/;
/** Most items of a unit one kind may process at once. */
export const MAX_KIND_CONCURRENCY = 64;

/**
 * A task kind as the coordinator uses it: the user's {@link TaskKind} with its optional parts filled in, so the
 * worker, the fold and the status read never ask whether a kind has params, an aggregate or a schema.
 */
export interface RegisteredKind {
  readonly name: string;
  /** Items of a unit at once; undefined: the app's WORK_UNIT_CONCURRENCY. */
  readonly concurrency: number | undefined;
  /** Whether jobs of the kind have an aggregate (otherwise partials are neither sent nor folded: it stays null). */
  readonly hasAggregate: boolean;
  /** The kind's global limits, normalized; undefined when it has none. */
  readonly limits: KindLimits | undefined;
  parseParams(value: unknown): Validated<unknown>;
  /** A partial read back from a queue or from state; a reason in one line when the kind's schema refuses it. */
  parsePartial(value: unknown): { ok: true; value: unknown } | { ok: false; reason: string };
  /**
   * The kind's own `process`: a synchronous kind's partial as it is (no promise made per item: issue 35), an
   * asynchronous kind's promise; a synchronous throw is thrown. The worker awaits only what can be awaited.
   */
  process(input: TaskInput, context: TaskContext<unknown>): unknown;
  empty(): unknown;
  merge(a: unknown, b: unknown): unknown;
  view(partial: unknown): unknown;
  size(partial: unknown): number;
}

/** Task kinds by name. */
export class TaskRegistry {
  private readonly kinds = new Map<string, RegisteredKind>();

  /** Registers kinds (an array or several arguments). @throws ConfigurationError for a bad or repeated kind. */
  constructor(kinds: readonly TaskKind[] = []) {
    for (const kind of kinds) this.register(kind);
  }

  /** Adds a kind. @throws ConfigurationError when its name is taken or its definition is not usable. */
  register<P, R, V>(kind: TaskKind<P, R, V>): this {
    const registered = toRegisteredKind(kind);
    if (this.kinds.has(registered.name))
      throw new ConfigurationError(`Task kind "${registered.name}" is registered twice; each kind needs its own name.`);
    this.kinds.set(registered.name, registered);
    return this;
  }

  /** The kind, or undefined. */
  get(name: string): RegisteredKind | undefined {
    return this.kinds.get(name);
  }

  /** Registered names, for error messages. */
  names(): string[] {
    return [...this.kinds.keys()];
  }
}

/**
 * Fills in a kind's optional parts and checks its definition up front.
 *
 * @throws ConfigurationError naming the kind and each problem.
 */
function toRegisteredKind(kind: TaskKind): RegisteredKind {
  const name = typeof kind.name === "string" ? kind.name : String(kind.name);
  const problems: string[] = [];
  if (!KIND_NAME.test(name)) problems.push("its name must be 1–64 letters, digits, '.', '_' or '-'");
  if (typeof kind.process !== "function") problems.push("process must be a function");
  const { concurrency, aggregate } = kind;
  if (concurrency !== undefined && !(Number.isInteger(concurrency) && concurrency >= 1))
    problems.push(`concurrency is ${String(concurrency)}; it must be a whole number from 1 to ${MAX_KIND_CONCURRENCY}`);
  else if (concurrency !== undefined && concurrency > MAX_KIND_CONCURRENCY)
    problems.push(`concurrency is ${concurrency}; it must be a whole number from 1 to ${MAX_KIND_CONCURRENCY}`);
  if (aggregate !== undefined && (typeof aggregate.empty !== "function" || typeof aggregate.merge !== "function"))
    problems.push("aggregate needs empty() and merge(a, b)");
  problems.push(...problemsText(kindLimitsProblems(kind.limits)));
  if (problems.length > 0)
    throw new ConfigurationError(`Task kind ${JSON.stringify(name)} is not usable: ${problems.join("; ")}.`);
  const { params } = kind;
  return {
    name,
    concurrency,
    hasAggregate: aggregate !== undefined,
    limits: kindLimitsOf(kind.limits),
    parseParams: (value) =>
      params === undefined ? { ok: true, value } : validateWith(params, value, `task kind "${name}"'s params`),
    parsePartial: (value) => {
      if (aggregate?.schema === undefined) return { ok: true, value };
      const parsed = validateWith(aggregate.schema, value, `task kind "${name}"'s aggregate`);
      return parsed.ok ? parsed : { ok: false, reason: issuesText(parsed.issues) };
    },
    // Runs the kind at once: the worker checks its time slice right before, and catches a synchronous throw as a
    // rejection.
    process: (input, context) => kind.process(input, context),
    empty: () => (aggregate === undefined ? null : aggregate.empty()),
    merge: (a, b) => (aggregate === undefined ? null : aggregate.merge(a, b)),
    view: (partial) => (aggregate?.view === undefined ? partial : aggregate.view(partial)),
    size: (partial) => (aggregate?.size === undefined ? defaultSize(partial) : aggregate.size(partial)),
  };
}

/** The default size of a partial: array length, object key count, otherwise 1 (null: 0). */
function defaultSize(partial: unknown): number {
  if (partial === null || partial === undefined) return 0;
  if (Array.isArray(partial)) return partial.length;
  if (typeof partial === "object") return Object.keys(partial).length;
  return 1;
}

/**
 * Merges many partials in a balanced tree of `merge` calls, so each level handles every entry once: log2(n) levels,
 * not n merges into an ever larger result. `empty()` when there are none.
 */
export function mergeAll(kind: Pick<RegisteredKind, "merge" | "empty">, partials: readonly unknown[]): unknown {
  let level = [...partials];
  if (level.length === 0) return kind.empty();
  while (level.length > 1) {
    const next: unknown[] = [];
    for (let index = 0; index < level.length; index += 2)
      next.push(index + 1 < level.length ? kind.merge(level[index], level[index + 1]) : level[index]);
    level = next;
  }
  return level[0];
}

/**
 * Merges partials as they arrive, in the balanced shape of {@link mergeAll} (a binary counter of merged runs): it holds
 * at most ⌈log2 n⌉ + 1 partials after n, never all n, so a unit of many items costs the worker the memory of its
 * merged result, not of every item's partial (issue 24: units carry up to 1,000 items).
 */
export class PartialMerger {
  /** `runs[k]`: the merge of 2^k partials, or undefined. */
  private readonly runs: unknown[] = [];
  private readonly filled: boolean[] = [];
  private added = 0;

  constructor(private readonly kind: Pick<RegisteredKind, "merge" | "empty">) {}

  /** Partials added so far. */
  get count(): number {
    return this.added;
  }

  add(partial: unknown): void {
    let carry = partial;
    let level = 0;
    while (this.filled[level] === true) {
      carry = this.kind.merge(this.runs[level], carry);
      this.runs[level] = undefined;
      this.filled[level] = false;
      level++;
    }
    this.runs[level] = carry;
    this.filled[level] = true;
    this.added++;
  }

  /** The merge of every partial added; `empty()` when there were none. */
  result(): unknown {
    let merged: { value: unknown } | undefined;
    this.runs.forEach((run, level) => {
      if (this.filled[level] !== true) return;
      merged = { value: merged === undefined ? run : this.kind.merge(run, merged.value) };
    });
    return merged === undefined ? this.kind.empty() : merged.value;
  }
}

export type { SchemaIssue };
