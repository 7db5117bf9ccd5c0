import fc from "fast-check";
import type { FaultKind } from "./plan";

/**
 * Issue 43's model of what found hole 1: results that name a job's items but that the leader cannot read — forged by
 * anyone who can write to the results queue, or a worker's own result damaged on its way — at any time, the units a
 * job sends last included. Kept in one field of the plan, `garbage`, generated after every earlier field (so adding it
 * left their values as they were).
 */
export interface GarbagePlan {
  /** Forged results, each aimed at a unit the leader sent (`garbageWorld.ts`). */
  forgeries: Forgery[];
  /** Worker results damaged on their way, by their place among the results workers send (1 = the first). */
  damaged: { nth: number; form: GarbageForm }[];
}

/** One forged result: which unit it names, when, from where and how it cannot be read. */
export interface Forgery {
  /**
   * The unit it names: the `nth` unit sent to the work queue (1 = the first), or the first unit sent that holds the
   * last item of one of the plan's jobs (`last`: the job's index in the plan, modulo its job count).
   */
  target: { nth: number } | { last: number };
  /** How long after that unit was sent it lands: before its worker has it, while it runs, or after its result. */
  delayMs: number;
  /** Which of the unit's items it names: all, its first, its last, or as many from its second (into the next unit). */
  part: "unit" | "first" | "last" | "shifted";
  form: GarbageForm;
  /** Who sends it: a process of its own (-1), or instance `from`'s (a worker gone wrong, or someone in its place). */
  from: number;
}

/**
 * How a result is garbage while it still names its unit: the wrong shape (`done` not ranges), a `__proto__` key, an
 * `outcomeBlob` its worker never writes, or a v1 result of the wrong shape naming one item.
 */
export type GarbageForm = "shape" | "proto" | "blob" | "v1";

/** The fault (in `--faults`) that switches the model on. */
export const GARBAGE_FAULTS = ["garbageResults"] as const;

const FORMS: readonly GarbageForm[] = ["shape", "proto", "blob", "v1"];

const forgeryArb: fc.Arbitrary<Forgery> = fc.record({
  target: fc.oneof(
    fc.record({ nth: fc.integer({ min: 1, max: 8 }) }),
    fc.record({ last: fc.integer({ min: 0, max: 2 }) }),
  ),
  // Mostly within a unit's first seconds (before its result is folded), sometimes any time in the next 30 s.
  delayMs: fc.oneof(
    { arbitrary: fc.integer({ min: 0, max: 3000 }), weight: 3 },
    { arbitrary: fc.integer({ min: 0, max: 30_000 }), weight: 1 },
  ),
  part: fc.constantFrom("unit" as const, "first" as const, "last" as const, "shifted" as const),
  form: fc.constantFrom(...FORMS),
  from: fc.integer({ min: -1, max: 3 }),
});

/** The arbitrary of the model, with only the faults in `faults`. */
export function garbageArb(faults: ReadonlySet<FaultKind>): fc.Arbitrary<GarbagePlan> {
  if (!faults.has("garbageResults")) return fc.constant({ forgeries: [], damaged: [] });
  return fc.record({
    forgeries: fc.array(forgeryArb, { minLength: 1, maxLength: 4 }),
    damaged: fc.array(fc.record({ nth: fc.integer({ min: 1, max: 12 }), form: fc.constantFrom(...FORMS) }), {
      maxLength: 2,
    }),
  });
}

/** The items a forgery names of a unit of `count` items from `first`: `[first, count]`. */
export function namedPart(part: Forgery["part"], first: number, count: number): [number, number] {
  switch (part) {
    case "unit":
      return [first, count];
    case "first":
      return [first, 1];
    case "last":
      return [first + count - 1, 1];
    case "shifted":
      return [first + 1, count];
  }
}

/** A result message the leader cannot read that names `count` items of job `jobId` from `first`. */
export function garbageText(form: GarbageForm, jobId: string, first: number, count: number): string {
  const unit = { v: 2, jobId, first, count };
  switch (form) {
    case "shape":
      return JSON.stringify({ ...unit, done: "all of them", failed: [] });
    case "proto":
      return `{"__proto__":{"polluted":true},${JSON.stringify({ ...unit, done: [[first, first + count - 1]], failed: [], partial: null }).slice(1)}`;
    case "blob":
      return JSON.stringify({
        ...unit,
        done: [[first, first + count - 1]],
        failed: [],
        outcomeBlob: `jobs/${jobId}/outcomes/forged-${first}.json`,
      });
    case "v1":
      return JSON.stringify({ v: 1, jobId, item: first, ok: "yes" });
  }
}
