import { LeaderSentinel } from "../coordination/wake/sentinel.js";
import { StaleEpochError } from "../library/errors.js";
import { runCoordinationStep, type StepReport } from "../coordination/step/step.js";
import type { LeaderTask } from "../library/leadership/runTerm.js";
import type { CoordinatorApp, Sink } from "./context.js";
import { coordinationDeps } from "./coordinationDeps.js";

/** What started a leadership attempt, for the step events. */
export type StepTrigger =
  | { trigger: "timer" }
  | { trigger: "wake"; wakeReason: string; wakeJobId?: string; wakeDelayMs: number; wakeFollowUp?: number };

/**
 * When a step that moved nothing (it only waited on workers) ends with jobs left, its sentinel starts the next step
 * this much later, in seconds, not at once: a job that cannot move (its units held by a worker that died, slow items)
 * costs a step's budget per this much more, about what the timer's ticks cost before sentinels (one step a minute).
 */
export const IDLE_STEP_SURFACE_S = 30;

/**
 * Longest a failed step puts off the next one, in s: the timer's default interval. A step that fails every time (one
 * blob storage refuses, a document it cannot read) would otherwise re-run every LEADER_SENTINEL_SECONDS, for ever.
 */
export const MAX_FAILED_STEP_SURFACE_S = 60;

/**
 * When the sentinel of the `failuresInARow`-th failed step in a row (in this process) starts the next step, in s:
 * twice the sentinel's period after the first failure, doubling with each, at most {@link MAX_FAILED_STEP_SURFACE_S}.
 */
export function failedStepSurfaceS(failuresInARow: number, hiddenS: number): number {
  return Math.min(hiddenS * 2 ** Math.min(Math.max(1, failuresInARow), 16), MAX_FAILED_STEP_SURFACE_S);
}

/**
 * Steps that failed in a row, per app (process-wide, as the app is: the next step may run in this process or another,
 * each backing off by what it saw). A completed step starts the count again.
 */
const failedInARow = new WeakMap<CoordinatorApp, number>();

/**
 * When the step's sentinel surfaces to start the next step, in s (undefined: the sentinel's period): soon after a step
 * that moved jobs on; {@link IDLE_STEP_SURFACE_S} after one that only waited — or, when every job left waits for its
 * `notBefore`, as soon as the first is due (at least 1 s on, at most that long: a later due time is looked at again).
 */
export function surfaceInS(report: StepReport, nowMs: number): number | undefined {
  if (moved(report)) return undefined;
  const { activeJobs, scheduledJobs, nextDueAtMs } = report;
  if (activeJobs > 0 && activeJobs === scheduledJobs && nextDueAtMs !== undefined)
    return Math.min(Math.max(1, Math.ceil((nextDueAtMs - nowMs) / 1000)), IDLE_STEP_SURFACE_S);
  return IDLE_STEP_SURFACE_S;
}

/** Whether a step moved anything: registered, folded, dispatched, failed, rejected, discarded or sent again. */
function moved(report: StepReport): boolean {
  const { registered, folded, dispatched, failed, rejected, discarded, redispatched } = report;
  return registered + folded + dispatched + failed + rejected + discarded + redispatched > 0;
}

/**
 * Whether a result nobody has received yet waits on the results queue as an idle step ends: one that landed after
 * the step's last fold, whose worker — seeing this leader live, its step with time left — sent no wake-up for it
 * (issue 43, hole 3). One peek. Results received before (left for a leader with the job's task kind, or of a newer
 * version) do not count: this leader cannot fold them. A failed peek says no: the sentinel surfaces later, as before.
 */
async function resultsWaiting(app: CoordinatorApp, abortSignal: AbortSignal, sink: Sink): Promise<boolean> {
  try {
    return (await app.resultsQueue.peek(32, { abortSignal })).some((message) => message.dequeueCount === 0);
  } catch (error) {
    sink.logger.verbose(
      `Instance ${app.instanceId} could not look at the results queue as its step ended: ${error instanceof Error ? error.message : String(error)}`,
    );
    return false;
  }
}

/** The leader's work for one attempt ({@link leaderStep}), and the epoch of its term once the term began. */
export interface LeaderStep {
  task: LeaderTask<StepReport>;
  readonly epoch: number | undefined;
}

/**
 * What the leader does in one term: the coordination step within the step budget, its sentinel armed while jobs are
 * active (`LEADER_SENTINEL_SECONDS`), and the step-started event. The elector runs `task` inside the term; the tick
 * reads `epoch` for its events when the attempt ends.
 */
export function leaderStep(app: CoordinatorApp, sink: Sink, trigger: StepTrigger): LeaderStep {
  const { instanceId } = app;
  let epoch: number | undefined;
  const task: LeaderTask<StepReport> = async (term) => {
    epoch = term.epoch;
    sink.emit({ type: "step-started", instanceId, atMs: Date.now(), epoch, ...trigger });
    const hiddenS = app.settings.LEADER_SENTINEL_SECONDS;
    const sentinel =
      hiddenS > 0 ? new LeaderSentinel(app.wakeQueue, { hiddenS, from: instanceId, logger: sink.logger }) : undefined;
    let ending: { remove: boolean; surfaceInS?: number } = { remove: false };
    try {
      const report = await runCoordinationStep(coordinationDeps(app, sink), term, {
        budgetMs: app.settings.STEP_BUDGET_MS,
        sentinel,
      });
      // No job left: nothing to look after. Jobs left: it surfaces and starts the next step — soon if this step
      // moved them on or a result came after its last fold, later if it only waited (activity wake-ups start one
      // sooner when results come), when the first is due if they all wait for their notBefore.
      const surfaceIn = report.activeJobs > 0 ? surfaceInS(report, Date.now()) : undefined;
      const idle = surfaceIn !== undefined && !(await resultsWaiting(app, term.signal, sink));
      ending = { remove: report.activeJobs === 0, ...(idle ? { surfaceInS: surfaceIn } : {}) };
      failedInARow.delete(app);
      return report;
    } catch (error) {
      // The step's own failure, its term still live: the next step comes later with each failure in a row (issue 37,
      // item 6b). A lost term, or a newer leader's write, leaves the sentinel to surface at once: someone looks.
      if (!term.signal.aborted && !(error instanceof StaleEpochError) && hiddenS > 0) {
        const failures = (failedInARow.get(app) ?? 0) + 1;
        failedInARow.set(app, failures);
        ending = { remove: false, surfaceInS: failedStepSurfaceS(failures, hiddenS) };
      }
      throw error;
    } finally {
      // A step that failed or lost its term leaves it to surface: someone looks at once.
      await sentinel?.end(ending);
    }
  };
  return {
    task,
    get epoch() {
      return epoch;
    },
  };
}
