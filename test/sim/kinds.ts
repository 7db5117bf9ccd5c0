import { z } from "zod";
import { groupByKind, groupRecords } from "../../src/groupBy/groupBy";
import { groupByParamsSchema } from "../../src/groupBy/groupBySchema";
import { ItemError, type TaskKind } from "../../src/coordination/kinds/taskKinds";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { taskLimitsOf, type LimitsPlan } from "./limits";

/**
 * A second task kind for the simulator, whose partial is an object (not an array like group-by's), so a leader that
 * lacks the kind and stores some other kind's "empty" shows up. Input: a whole number as text; "crash" throws an
 * ordinary Error on every delivery (a worker that dies on one item: the host poisons it after 5 deliveries).
 */
const sumParams = z.strictObject({ scale: z.number().int().min(1).max(3) });
export const sumKind: TaskKind<{ scale: number }, { n: number; total: number }> = {
  name: "sim-sum",
  params: sumParams,
  process: ({ text }, { params }) => sumOf(text, params),
  aggregate: {
    schema: z.strictObject({ n: z.number().int().min(0), total: z.number().int() }),
    merge: (a, b) => ({ n: a.n + b.n, total: a.total + b.total }),
    empty: () => ({ n: 0, total: 0 }),
  },
};

/** What {@link sumKind} makes of one input. */
export function sumOf(input: string, { scale }: { scale: number }): { n: number; total: number } {
  if (input === "crash" || input === "kill") throw new Error("simulated worker crash on this item");
  // Trailing spaces: a large item's padding (chunkMix.ts).
  if (!/^-?\d{1,6} *$/.test(input)) throw new ItemError(`not a whole number: ${JSON.stringify(input.slice(0, 20))}`);
  return { n: 1, total: Number(input) * scale };
}

/** Kind names the simulator submits jobs of. */
export const SIM_KINDS = [groupByKind.name, sumKind.name] as const;
export type SimKindName = (typeof SIM_KINDS)[number];

/**
 * The work of one item before the kind computes it (`world.ts`: the item's share of its unit's time, cut short when
 * its `abortSignal` fires, as a real kind's calls are; a `kill` item's process dies there). Rejects when aborted.
 */
export type SimItemWork = (
  text: string,
  abortSignal: AbortSignal,
  item: { jobId: string; index: number },
) => Promise<void>;

/**
 * A registry with every kind except `missing` (a process deployed without some kinds). `onDone`: told of each item a
 * kind processed without throwing (its output, were it a real kind, written), as it returns. `work`: what each item
 * does first. `limits`: the kinds' limits as the plan's code declares them (issue 42; `limits.ts`).
 */
export function simRegistry(
  missing: readonly string[] = [],
  onDone?: (jobId: string, index: number) => void,
  work?: SimItemWork,
  limits?: LimitsPlan["kinds"],
): TaskRegistry {
  const registry = new TaskRegistry();
  if (!missing.includes(groupByKind.name))
    registry.register(observed(limited(groupByKind, limits?.["group-by"]), onDone, work));
  if (!missing.includes(sumKind.name)) registry.register(observed(limited(sumKind, limits?.["sim-sum"]), onDone, work));
  return registry;
}

/** The kind with the limits its code declares in this plan. */
function limited<P, R, V>(
  kind: TaskKind<P, R, V>,
  limits: Parameters<typeof taskLimitsOf>[0] | undefined,
): TaskKind<P, R, V> {
  const declared = limits === undefined ? undefined : taskLimitsOf(limits);
  return declared === undefined ? kind : { ...kind, limits: declared };
}

function observed<P, R, V>(
  kind: TaskKind<P, R, V>,
  onDone: ((jobId: string, index: number) => void) | undefined,
  work?: SimItemWork,
) {
  if (onDone === undefined && work === undefined) return kind;
  return {
    ...kind,
    process: async (...args: Parameters<TaskKind<P, R, V>["process"]>): Promise<R> => {
      await work?.(args[0].text, args[1].abortSignal, { jobId: args[1].jobId, index: args[1].index });
      const partial = await kind.process(...args);
      onDone?.(args[1].jobId, args[1].index);
      return partial;
    },
  } satisfies TaskKind<P, R, V>;
}

/** A simulated kind's partial of one input, computed synchronously (the invariants recompute aggregates with it). */
export function simPartial(kind: string, input: string, params: unknown): unknown {
  return kind === sumKind.name
    ? sumOf(input, sumParams.parse(params))
    : groupRecords(input, groupByParamsSchema.parse(params));
}
