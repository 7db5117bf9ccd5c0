import { ConcurrentUpdateError, LeadershipLostError, StaleEpochError } from "../../library/errors.js";
import type { Abortable } from "../../library/util/delay.js";
import type { CoordinationDeps } from "../deps.js";
import { jobSpecSchema, keys } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";
import { releaseClaim } from "./idempotency.js";

/**
 * Retention of ended jobs: nothing of a job stays for ever. As the leader takes an ended job off the active list it
 * writes a marker `ended/<when>-<id>` in the system container; once the job has been ended for JOB_RETENTION_HOURS, a
 * step removes everything of it — the blobs under `jobs/<id>/` in the system container (spec, item chunks, outcome
 * blobs, partials, the stop blob), its cancellation and inbox markers, its state document, its place in the index's
 * list of recent jobs — and the marker last, so a removal cut short (a crash, the step's budget) goes on in a later
 * step. Until then the job reads as it did; after, GET /api/jobs/{id} answers 404.
 *
 * A blob's snapshots (a backup tool's, an operator's) are deleted with it: the system container is the app's own, and
 * a plain delete of a blob with snapshots answers 409 on every try. A job whose removal fails all the same (a blob
 * under a legal hold or an immutability policy, storage trouble) holds up nothing: it is reported
 * (`job-removal-failed`), its marker moves to `removal-retry/` named by when it is tried again — after an hour, then
 * doubling to a day ({@link removalBackOffMs}) — and the other jobs' removal and the step go on.
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
/** Longest wait before a failed removal is tried again, in ms: a day. */
export const MAX_REMOVAL_BACK_OFF_MS = 24 * 3_600_000;
/** Longest error text a retry marker and its event keep. */
const MAX_ERROR_CHARS = 500;

/** How long after its `attempts`-th failure a job's removal is tried again, in ms: an hour, doubling, at most a day. */
export function removalBackOffMs(attempts: number): number {
  return Math.min(RETENTION_SWEEP_INTERVAL_MS * 2 ** Math.max(0, Math.min(attempts - 1, 16)), MAX_REMOVAL_BACK_OFF_MS);
}

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

/** A job due for removal, and the marker that names it. */
interface DueJob {
  marker: string;
  id: string;
  endedAtMs: number;
  /** Removals of it that failed before. */
  attempts: number;
}

/** A retention marker's job and end time; undefined for a name that is not one. */
function parseMarker(name: string): { id: string; endedAtMs: number } | undefined {
  const match = /^ended\/(\d{15})-([a-z0-9-]{1,63})$/.exec(name);
  return match === null ? undefined : { endedAtMs: Number(match[1]), id: match[2] ?? "" };
}

/** A retry marker's job, end time, attempts and when it is due; undefined for a name that is not one. */
export function parseRetryMarker(
  name: string,
): { id: string; endedAtMs: number; attempts: number; retryAtMs: number } | undefined {
  const match = /^removal-retry\/(\d{15})-(\d{15})-(\d{1,6})-([a-z0-9-]{1,63})$/.exec(name);
  if (match === null) return undefined;
  return { retryAtMs: Number(match[1]), endedAtMs: Number(match[2]), attempts: Number(match[3]), id: match[4] ?? "" };
}

/** What {@link removeExpiredJobs} did. */
export interface RetentionReport {
  /** Jobs removed completely. */
  removed: number;
  /** Jobs whose removal failed, each reported and put off ({@link removalBackOffMs}). */
  failed: number;
  /** True when nothing due is left: every marker listed was handled, and the lists were not cut at their bound. */
  complete: boolean;
}

/**
 * Removes the jobs that have been ended for the retention period, and those whose failed removal is due again (see
 * the module's comment), the latter first, oldest first, while the step's budget lasts. One job's failure is reported
 * and put off; only an abort, a lost term or a newer leader's write ends it early (thrown), or the budget.
 */
export async function removeExpiredJobs(
  deps: CoordinationDeps,
  jobs: JobStore,
  options: RetentionOptions,
): Promise<RetentionReport> {
  const io: Abortable = options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal };
  const [retries, markers] = await Promise.all([
    deps.system.list(keys.removalRetryPrefix, MARKERS_PER_STEP, io),
    deps.system.list(keys.endedPrefix, MARKERS_PER_STEP, io),
  ]);
  const nowMs = deps.now();
  const due: DueJob[] = [];
  // Each list is sorted by when its jobs are due: it is whole when it ends on one not due yet, or short of its bound.
  let complete = true;
  const take = (names: string[], read: (name: string) => DueJob | "later" | undefined): void => {
    for (const name of names) {
      const job = read(name);
      if (job === "later") return;
      if (job !== undefined) due.push(job);
    }
    if (names.length >= MARKERS_PER_STEP) complete = false;
  };
  const unreadable: string[] = [];
  take(retries, (name) => {
    const retry = parseRetryMarker(name);
    if (retry === undefined) unreadable.push(name);
    else return retry.retryAtMs > nowMs ? "later" : { marker: name, ...retry };
    return undefined;
  });
  take(markers, (name) => {
    const ended = parseMarker(name);
    if (ended === undefined) unreadable.push(name);
    else return ended.endedAtMs > nowMs - deps.jobRetentionMs ? "later" : { marker: name, ...ended, attempts: 0 };
    return undefined;
  });
  for (const name of unreadable) {
    deps.logger.warn(`Retention marker ${name} names no job; removing it.`, { instanceId: deps.instanceId });
    await deps.system.delete(name, io);
  }
  const progress = { rounds: 0, removed: 0, failed: 0 };
  const spent = (): boolean => progress.rounds > 0 && options.pastBudget?.() === true;
  for (const job of due) {
    if (spent()) return { removed: progress.removed, failed: progress.failed, complete: false };
    let finished: boolean;
    try {
      finished = await removeJob(deps, jobs, job, progress, spent, io);
    } catch (error) {
      if (options.abortSignal?.aborted === true || error instanceof StaleEpochError) throw error;
      if (error instanceof LeadershipLostError) throw error;
      progress.failed++;
      await putOff(deps, jobs.epoch, job, error, io);
      continue;
    }
    if (!finished) return { removed: progress.removed, failed: progress.failed, complete: false };
    progress.removed++;
  }
  return { removed: progress.removed, failed: progress.failed, complete };
}

/**
 * Removes one job: its blobs a round at a time, then its markers, its state, its place in the index, and the marker
 * that named it last. False when it stopped short (the budget, a concurrent write), to go on in a later step.
 */
async function removeJob(
  deps: CoordinationDeps,
  jobs: JobStore,
  job: DueJob,
  progress: { rounds: number },
  spent: () => boolean,
  io: Abortable,
): Promise<boolean> {
  // Its idempotency key's claim before anything else (the key is remembered as long as the job): a retry racing the
  // removal then makes a new job, and a stale copy of this one is not registered again (`registerJobs`).
  await releaseClaimOf(deps, job.id, io);
  // The job's blobs first, a round at a time; the state document after them, so its status stays readable (not
  // "pending" from a spec left behind) until nothing else of it is left.
  let blobs = 0;
  for (;;) {
    if (spent()) return false;
    const names = await deps.system.list(keys.jobPrefix(job.id), DELETE_BATCH, io);
    progress.rounds++;
    if (names.length === 0) break;
    const deleted = await Promise.allSettled(names.map((name) => deps.system.delete(name, io)));
    const refused = deleted.find((result) => result.status === "rejected");
    if (refused !== undefined) throw refused.reason;
    blobs += names.length;
  }
  if (spent()) return false;
  await Promise.all([keys.cancel(job.id), keys.inbox(job.id)].map((name) => deps.system.delete(name, io)));
  const state = await deps.state.readSummary(keys.jobState(job.id), io);
  if (state !== undefined) {
    try {
      await jobs.deleteJob(job.id, state, io);
    } catch (error) {
      // Written since it was read (a stale leader's late write): the next step reads it again.
      if (error instanceof ConcurrentUpdateError) return false;
      throw error;
    }
  }
  await jobs.updateIndex({ forget: [job.id] }, io);
  await deps.system.delete(job.marker, io);
  deps.logger.info(`Removed job ${job.id}, ended ${new Date(job.endedAtMs).toISOString()} (retention).`, {
    instanceId: deps.instanceId,
    epoch: jobs.epoch,
  });
  deps.emit({
    type: "job-removed",
    instanceId: deps.instanceId,
    atMs: deps.now(),
    epoch: jobs.epoch,
    jobId: job.id,
    endedAtMs: job.endedAtMs,
    blobs,
  });
  return true;
}

/**
 * Reports a job whose removal failed and puts it off: its marker moves to `removal-retry/`, named by when it is tried
 * again ({@link removalBackOffMs}), the new one written before the old one is deleted (a crash between leaves both:
 * the job is removed once, and the other marker then finds nothing left). A marker that cannot be moved stays where it
 * is, due at the next sweep, an hour later.
 */
async function putOff(
  deps: CoordinationDeps,
  epoch: number,
  job: DueJob,
  error: unknown,
  io: Abortable,
): Promise<void> {
  const attempts = job.attempts + 1;
  const retryAtMs = deps.now() + removalBackOffMs(attempts);
  const message = (error instanceof Error ? error.message : String(error)).slice(0, MAX_ERROR_CHARS);
  deps.logger.warn(
    `Job ${job.id} could not be removed (attempt ${attempts}); it is tried again at ${new Date(retryAtMs).toISOString()}, and the other jobs go on: ${message}`,
    { instanceId: deps.instanceId, epoch },
  );
  deps.emit({
    type: "job-removal-failed",
    instanceId: deps.instanceId,
    atMs: deps.now(),
    epoch,
    jobId: job.id,
    endedAtMs: job.endedAtMs,
    attempts,
    retryAtMs,
    error: message,
  });
  try {
    const next = keys.removalRetry(job.id, job.endedAtMs, attempts, retryAtMs);
    await deps.system.writeText(next, JSON.stringify({ v: 1, error: message }), io);
    await deps.system.delete(job.marker, io);
  } catch (moveError) {
    if (io.abortSignal?.aborted === true) throw moveError;
    deps.logger.warn(
      `The retention marker of job ${job.id} could not be moved; the next sweep tries the job again: ${moveError instanceof Error ? moveError.message : String(moveError)}`,
      { instanceId: deps.instanceId, epoch },
    );
  }
}

/** Removes the claim of the job's idempotency key, read from its spec, if it names the job (one read for any job). */
async function releaseClaimOf(deps: CoordinationDeps, id: string, io: Abortable): Promise<void> {
  const text = await deps.system.readText(keys.spec(id), io);
  if (text === undefined) return;
  let key: string | undefined;
  try {
    const spec = jobSpecSchema.safeParse(JSON.parse(text));
    key = spec.success ? spec.data.idempotencyKey : undefined;
  } catch {
    key = undefined; // a damaged spec names no claim this version can find
  }
  if (key !== undefined) await releaseClaim(deps.system, key, id, io);
}
