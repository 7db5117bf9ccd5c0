import fc from "fast-check";
import type { FaultKind } from "./plan";

/**
 * Issue 37's models, beside the faults and the activity: the tail window (a job's last units going out with the
 * window, so a term may die with more than a window in flight) and hosts shutting down on a unit's last delivery
 * (every deploy and scale-in), and jobs whose blobs refuse deletion when retention removes them. Kept in one field of
 * the plan, `lifecycle`, generated after every earlier field.
 */
export interface LifecyclePlan {
  /** WORK_UNIT_SPREAD: 1 (units as large as the plan allows), or 4 (units of 2: a job's tail of 4 goes out whole). */
  unitSpread: number;
  /**
   * Hosts shutting down (`lifecycleWorld.ts`): each, from `atS`, strikes the next unit on its last delivery to finish
   * an item, or after `forS` the next unit to finish one.
   */
  shutdowns: { atS: number; forS: number }[];
  /**
   * Jobs that ended before the run began, past their retention (`retentionWorld.ts`), with the `refuseDelete` fault:
   * each has `blobs` blobs, and `held` of them (the last) refuse deletion — a legal hold or immutability policy: 409 on
   * every delete. Their removal is due in the run's first sweep.
   */
  expiredJobs: { blobs: number; held: number }[];
  /**
   * Longest a delivery of a unit of the plan's jobs (not a burst's) takes, in ms: 2,000, or with the `slowItems` fault
   * 2,000 or 20,000 (a kind whose
   * items take seconds; the host renews the message's visibility meanwhile): units stay in flight for several of a
   * leader's steps, so a term can die with a window and its tail out and only some of its units folded.
   */
  unitMs: number;
}

/** The faults (in `--faults`) that switch on the lifecycle models' faults. */
export const LIFECYCLE_FAULTS = ["shutdown", "refuseDelete", "slowItems"] as const;

/** The arbitrary of the lifecycle models, with only the faults in `faults`. */
export function lifecycleArb(faults: ReadonlySet<FaultKind>): fc.Arbitrary<LifecyclePlan> {
  return fc.record({
    unitSpread: fc.constantFrom(1, 4),
    shutdowns: faults.has("shutdown")
      ? fc.array(fc.record({ atS: fc.integer({ min: 0, max: 60 }), forS: fc.integer({ min: 5, max: 60 }) }), {
          maxLength: 3,
        })
      : fc.constant([]),
    // After the fields before it, so adding it left their values as they were.
    expiredJobs: faults.has("refuseDelete")
      ? fc.array(fc.record({ blobs: fc.integer({ min: 1, max: 4 }), held: fc.integer({ min: 0, max: 1 }) }), {
          minLength: 1,
          maxLength: 3,
        })
      : fc.constant([]),
    // After the fields before it, so adding it left their values as they were.
    unitMs: faults.has("slowItems") ? fc.constantFrom(2000, 20_000) : fc.constant(2000),
  });
}
