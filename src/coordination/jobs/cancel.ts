import { AbortError, LeadershipLostError, StaleEpochError } from "../../library/errors.js";
import type { Versioned } from "../../library/fencing/FencedStateStore.js";
import type { CoordinationDeps, CoordinationPorts } from "../deps.js";
import { isJobId, keys, readJobState, type JobState, type StoppedStatus } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";
import type { CancelRequestResult } from "../state/jobStatus.js";

export type { CancelRequestResult } from "../state/jobStatus.js";
import { withoutHeld } from "../state/heldItems.js";
import { MARKERS_LISTED, takeInTurn, type MarkerTurn } from "./markerTurn.js";
import { writeJobStop } from "../state/jobStops.js";
import type { Abortable } from "../../library/util/delay.js";

/**
 * Cancellation and deadlines. A cancellation is a request the submitter writes (a marker blob `cancel/<id>` next to the
 * inbox), never the leader's fenced state; the leader applies it in its next step. A deadline is part of the job's
 * spec; the leader ends a running job whose deadline has passed. Both end states are final, like `completed`.
 */

/**
 * Requests cancellation of a job (any instance, no lease). Writes only the request marker, never job state; and none
 * for a job whose state this version cannot read (`unreadable`: it cannot tell whether the job has ended).
 */
export async function requestCancel(
  ports: Pick<CoordinationPorts, "state" | "system">,
  id: string,
  options: Abortable & { now?: () => number } = {},
): Promise<CancelRequestResult> {
  if (!isJobId(id)) return { outcome: "not-found" };
  const stored = await readJobState(ports.state, id, options);
  if (stored !== undefined) {
    if (!stored.ok) return { outcome: "unreadable", reason: stored.reason };
    const { status } = stored.value;
    if (status !== "running") return { outcome: "ended", status };
  } else if ((await ports.system.readText(keys.spec(id), options)) === undefined) {
    return { outcome: "not-found" };
  }
  await ports.system.writeText(
    keys.cancel(id),
    JSON.stringify({ v: 1, requestedAtMs: (options.now ?? Date.now)() }),
    options,
  );
  // After the request, so that workers never stop a job the leader will not end. Best effort: the leader writes it too
  // when it applies the request; until then workers go on with the job's items, as before.
  await writeJobStop(ports.system, id, options).catch(() => undefined);
  return { outcome: "requested", id };
}

/** Whether a cancellation of the job has been requested and not yet applied. */
export async function isCancelRequested(
  system: CoordinationPorts["system"],
  id: string,
  options: Abortable = {},
): Promise<boolean> {
  return (await system.readText(keys.cancel(id), options)) !== undefined;
}

/** Most cancellation requests applied per pass. */
const CANCEL_BATCH = 50;

/** What {@link applyCancelRequests} did: jobs cancelled, and requests kept because applying them failed. */
export interface CancelPassReport {
  cancelled: number;
  /** Requests that could not be applied in this pass (each logged and a `job-pass-failed` event), kept for later. */
  failed: { jobId: string; error: string }[];
}

/**
 * Applies stored cancellation requests: a running job becomes `cancelled` (a fenced write), then the request is
 * removed. A request for a job still waiting in the inbox is kept until registration; one for an ended job, or for
 * no job, is removed. A crash between the write and the removal leaves the request, which then finds the job ended.
 *
 * Stops once the step's budget is spent (`pastBudget`); the rest wait for the next pass. One request that cannot be
 * applied — its job's state unreadable (a newer version's, or damaged), storage refusing
 * the write — does not hold up the others or the step: it is logged, emitted as `job-pass-failed`, kept for a later
 * pass, and the next request is applied. Losing leadership, a newer leader's write or an abort still ends the pass.
 */
export async function applyCancelRequests(
  deps: CoordinationDeps,
  jobs: JobStore,
  options: Abortable & { pastBudget?: () => boolean; turn?: MarkerTurn },
): Promise<CancelPassReport> {
  const listed = await deps.system.list(keys.cancelPrefix, MARKERS_LISTED, options);
  // In turn (`markerTurn.ts`): requests kept for later never hold up the others (issue 43).
  const turn = options.turn ?? { after: undefined };
  const markers = takeInTurn(listed, CANCEL_BATCH, turn, jobs.epoch);
  const report: CancelPassReport = { cancelled: 0, failed: [] };
  for (const [applied, marker] of markers.entries()) {
    // Once the step's budget is spent the rest wait for the next pass (at least one is applied per pass).
    if (applied > 0 && options.pastBudget?.() === true) break;
    turn.after = marker;
    const id = marker.slice(keys.cancelPrefix.length);
    try {
      if (await applyCancelRequest(deps, jobs, marker, id, options)) report.cancelled++;
    } catch (error) {
      if (
        options.abortSignal?.aborted === true ||
        error instanceof StaleEpochError ||
        error instanceof LeadershipLostError ||
        error instanceof AbortError
      )
        throw error;
      const message = `cancellation request ${marker} kept for later: ${error instanceof Error ? error.message : String(error)}`;
      report.failed.push({ jobId: id, error: message });
      deps.logger.warn(`Job ${id}: ${message}; the other requests and jobs go on.`, {
        instanceId: deps.instanceId,
        epoch: jobs.epoch,
      });
      deps.emit({
        type: "job-pass-failed",
        instanceId: deps.instanceId,
        atMs: deps.now(),
        epoch: jobs.epoch,
        jobId: id,
        error: message,
      });
    }
  }
  return report;
}

/** Applies one cancellation request (see {@link applyCancelRequests}); true when it cancelled the job. */
async function applyCancelRequest(
  deps: CoordinationDeps,
  jobs: JobStore,
  marker: string,
  id: string,
  options: Abortable,
): Promise<boolean> {
  const job = isJobId(id) ? await jobs.readJob(id, options) : undefined;
  if (job === undefined && isJobId(id) && (await deps.system.readText(keys.inbox(id), options)) !== undefined)
    return false; // not registered yet
  let cancelled = false;
  if (job?.value.status === "running") {
    const now = deps.now();
    // A write that loses a race (a stale leader's) is retried on a fresh read; a job that ended meanwhile stays so.
    const updated = await jobs.updateJob(
      id,
      (state) => (state.status === "running" ? stopJob(state, "cancelled", now) : undefined),
      options,
      job,
    );
    cancelled = updated?.value.status === "cancelled";
  } else if (job === undefined) {
    deps.logger.warn(`Cancellation request ${marker} names no job; dropping it.`, { instanceId: deps.instanceId });
  }
  await deps.system.delete(marker, options);
  return cancelled;
}

/** Ends a running job whose deadline has passed as `expired` (a fenced write); returns the job as it now is. */
export async function expireIfDue(
  deps: CoordinationDeps,
  jobs: JobStore,
  job: Versioned<JobState>,
  options: Abortable,
): Promise<Versioned<JobState>> {
  const now = deps.now();
  const due = (state: JobState): boolean =>
    state.status === "running" && state.deadlineAtMs !== undefined && now >= state.deadlineAtMs;
  if (!due(job.value)) return job;
  return (
    (await jobs.updateJob(
      job.value.id,
      (state) => (due(state) ? stopJob(state, "expired", now) : undefined),
      options,
      job,
    )) ?? job
  );
}

/** A running job stopped early: items neither done nor failed — held ones too — are counted as skipped. */
function stopJob(state: JobState, status: StoppedStatus, nowMs: number): JobState {
  const ended = withoutHeld(state);
  return { ...ended, status, endedAtMs: nowMs, skippedCount: ended.itemCount - ended.doneCount - ended.failedCount };
}
