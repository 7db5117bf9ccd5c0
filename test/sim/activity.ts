import fc from "fast-check";
import type { FaultKind } from "./plan";

/**
 * Issue 21's models of how the app is used, beside the faults: wake-ups (submissions and workers wake the coordinator,
 * so short idle steps happen between ticks), manifests, operators whose step-down requests take seconds to land
 * (racing those short terms), a status page open in a browser, and bursts of many small jobs on storage that takes a
 * few milliseconds a request. Kept in one field of the plan, `activity`, generated after every earlier field.
 */
export interface ActivityPlan {
  /**
   * Submissions send a wake-up, workers send wake-ups from queue activity (ACTIVITY_WAKE_INTERVAL_MS 5 s, follow-ups
   * included), and every instance runs the wake-up queue trigger: short steps between ticks.
   */
  wakeUps: boolean;
  /** Per job of the plan, by index: submitted through a manifest (NDJSON in the input container), not inline. */
  viaManifest: boolean[];
  /**
   * Operators' step-down requests (`POST /api/leader/step-down`): each from its own process, every request of which
   * takes up to `latencyMs` to land, so the lease read and the request's write can be seconds apart.
   */
  stepDowns: { atS: number; latencyMs: number }[];
  /** A status page open in a browser: a refresh every 5 s (± 1 s), and one job's status now and then. */
  statusReads: boolean;
  /**
   * Many small jobs submitted at once (one item each), and from then on every storage request of the instances takes
   * `latencyMs`: a step's passes over many active jobs take time, as on Azure.
   */
  burst: { atS: number; jobs: number; latencyMs: number } | null;
}

/** The faults (in `--faults`) that switch on the racing step-downs and the bursts of jobs. */
export const ACTIVITY_FAULTS = ["racingStepDown", "manyJobs"] as const;

/** The arbitrary of the activity, with only the faults in `faults`. */
export function activityArb(faults: ReadonlySet<FaultKind>): fc.Arbitrary<ActivityPlan> {
  return fc.record({
    wakeUps: fc.boolean(),
    viaManifest: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
    stepDowns: faults.has("racingStepDown")
      ? fc.array(fc.record({ atS: fc.integer({ min: 0, max: 60 }), latencyMs: fc.integer({ min: 0, max: 8000 }) }), {
          maxLength: 3,
        })
      : fc.constant([]),
    statusReads: fc.boolean(),
    burst: faults.has("manyJobs")
      ? fc.oneof(
          { weight: 2, arbitrary: fc.constant(null) },
          {
            weight: 1,
            arbitrary: fc.record({
              atS: fc.integer({ min: 0, max: 40 }),
              jobs: fc.integer({ min: 20, max: 80 }),
              latencyMs: fc.integer({ min: 5, max: 20 }),
            }),
          },
        )
      : fc.constant(null),
  });
}

/** When the activity's last planned event happens, in ms from the start (the run's calm phase begins after it). */
export function activityEndMs(activity: ActivityPlan): number {
  const stepDowns = activity.stepDowns.map((request) => request.atS * 1000 + 2 * request.latencyMs);
  return Math.max(0, ...stepDowns, (activity.burst?.atS ?? 0) * 1000);
}
