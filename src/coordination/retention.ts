import { ConcurrentUpdateError } from "../library/errors.js";
import type { Abortable } from "../library/util/delay.js";
import type { CoordinationDeps } from "./deps.js";
import { keys } from "./jobState.js";
import type { JobStore } from "./jobStore.js";

/**
 * Retention of ended jobs: nothing of a job stays for ever. As the leader takes an ended job off the active list it
 * writes a marker `ended/<when>-<id>` in the system container; once the job has been ended for JOB_RETENTION_HOURS, a
 * step removes everything of it — the blobs under `jobs/<id>/` in the system container (spec, item chunks, outcome
 * blobs, partials, the stop blob), its cancellation and inbox markers, its state document, its place in the index's
 * list of recent jobs — and the marker last, so a removal cut short (a crash, the step's budget) goes on in a later
 * step. Until then the job reads as it did; after, GET /api/jobs/{id} answers 404.
 */

/** Markers a step looks at (the oldest first: their names sort by the time the job ended). */
const MARKERS_PER_STEP = 20;
/**
 * How often the leader looks for ended jobs to remove, in ms: once an hour (a listing of the markers), and in every
 * step while a removal is unfinished. A job goes between JOB_RETENTION_HOURS and an hour later.
 */
export const RETENTION_SWEEP_INTERVAL_MS = 3_600_000;
/** Blobs of a job listed, then deleted at once, per round: a job of a million items has a thousand chunks. */
const DELETE_BATCH = 256;

/** Writes the retention marker of a job that ended at `endedAtMs` (idempotent: the same name each time). */
export async function noteEnded(
  deps: Pick<CoordinationDeps, "system">,
  id: string,
  endedAtMs: number,
  options: Abortable,
): Promise<void> {
  await deps.system.writeText(keys.ended(id, endedAtMs), JSON.stringify({ v: 1, id, endedAtMs }), options);
}

/** Options of {@link removeExpiredJobs}. */
export interface RetentionOptions extends Abortable {
  /** True once the step's budget is spent: nothing more is started (but one round of deletes, so removal goes on). */
  pastBudget?: () => boolean;
}

/** A retention marker's job and end time; undefined for a name that is not one. */
function parseMarker(name: string): { id: string; endedAtMs: number } | undefined {
  const match = /^ended\/(\d{15})-([a-z0-9-]{1,63})$/.exec(name);
  return match === null ? undefined : { endedAtMs: Number(match[1]), id: match[2] ?? "" };
}

/** What {@link removeExpiredJobs} did. */
export interface RetentionReport {
  /** Jobs removed completely. */
  removed: number;
  /** True when nothing due is left: every marker listed was handled, and the list was not cut at its bound. */
  complete: boolean;
}

/**
 * Removes the jobs that have been ended for the retention period (see the module's comment), oldest first, while the
 * step's budget lasts.
 */
export async function removeExpiredJobs(
  deps: CoordinationDeps,
  jobs: JobStore,
  options: RetentionOptions,
): Promise<RetentionReport> {
  const io: Abortable = options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal };
  const markers = await deps.system.list(keys.endedPrefix, MARKERS_PER_STEP, io);
  const dueBefore = deps.now() - deps.jobRetentionMs;
  let removed = 0;
  let rounds = 0;
  const unfinished = (): RetentionReport => ({ removed, complete: false });
  const spent = (): boolean => rounds > 0 && options.pastBudget?.() === true;
  for (const marker of markers) {
    const ended = parseMarker(marker);
    if (ended === undefined) {
      deps.logger.warn(`Retention marker ${marker} names no job; removing it.`, { instanceId: deps.instanceId });
      await deps.system.delete(marker, io);
      continue;
    }
    if (ended.endedAtMs > dueBefore) return { removed, complete: true }; // the rest ended later still
    // The job's blobs first, a round at a time; the state document after them, so its status stays readable (not
    // "pending" from a spec left behind) until nothing else of it is left.
    let blobs = 0;
    for (;;) {
      if (spent()) return unfinished();
      const names = await deps.system.list(keys.jobPrefix(ended.id), DELETE_BATCH, io);
      rounds++;
      if (names.length === 0) break;
      await Promise.all(names.map((name) => deps.system.delete(name, io)));
      blobs += names.length;
    }
    if (spent()) return unfinished();
    await Promise.all([keys.cancel(ended.id), keys.inbox(ended.id)].map((name) => deps.system.delete(name, io)));
    const state = await deps.state.readSummary(keys.jobState(ended.id), io);
    if (state !== undefined) {
      try {
        await jobs.deleteJob(ended.id, state, io);
      } catch (error) {
        // Written since it was read (a stale leader's late write): the next step reads it again.
        if (error instanceof ConcurrentUpdateError) return unfinished();
        throw error;
      }
    }
    await jobs.updateIndex({ forget: [ended.id] }, io);
    await deps.system.delete(marker, io);
    removed++;
    deps.logger.info(`Removed job ${ended.id}, ended ${new Date(ended.endedAtMs).toISOString()} (retention).`, {
      instanceId: deps.instanceId,
      epoch: jobs.epoch,
    });
    deps.emit({
      type: "job-removed",
      instanceId: deps.instanceId,
      atMs: deps.now(),
      epoch: jobs.epoch,
      jobId: ended.id,
      endedAtMs: ended.endedAtMs,
      blobs,
    });
  }
  return { removed, complete: markers.length < MARKERS_PER_STEP };
}
