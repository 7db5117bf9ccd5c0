import { jobIndexSchema, keys } from "../coordination/state/jobState.js";
import { scheduleOf } from "../coordination/state/jobSchedule.js";
import { countReasons, readJobSummary, type JobSummary, type ReasonCount } from "../coordination/state/jobSummary.js";
import { readJobStatus, readPendingStatus, type JobStatus } from "../coordination/jobs/status.js";
import type { Abortable } from "../library/util/delay.js";
import type { BlobFiles, MessageQueue } from "../coordination/ports/ports.js";
import type { TaskRegistry } from "../coordination/kinds/taskRegistry.js";
import type { StateStore } from "../library/fencing/StateStore.js";
import type { LeaseStore } from "../library/lease/LeaseStore.js";

/**
 * The status page's jobs: each read from its summary (one small request; never its document, whose bitmaps and
 * aggregate may be megabytes), into the line the page shows.
 */

/** Most active jobs shown; more are counted in `jobs.moreActive`. */
export const MAX_ACTIVE_JOBS_SHOWN = 25;
/** Most submitted-but-unregistered jobs shown. */
export const MAX_PENDING_JOBS_SHOWN = 10;
/** Most distinct failure reasons listed (per job and overall). */
export const MAX_REASONS_SHOWN = 5;
/** What the view reads: a subset of the app's ports (the app itself fits). */
export interface StatusSources {
  leaseStore: LeaseStore;
  state: StateStore;
  /** The system container: inbox markers and specs of jobs not yet registered. */
  system: BlobFiles;
  registry: TaskRegistry;
  workPoisonQueue: MessageQueue;
  resultsPoisonQueue: MessageQueue;
}

/**
 * Runs one read of the view; on failure (but an abort) records `what` and why among the problems and answers
 * `fallback`.
 */
export type Attempt = <T>(what: string, read: () => Promise<T>, fallback: T) => Promise<T>;

/** The jobs the page lists: active (at most {@link MAX_ACTIVE_JOBS_SHOWN}), pending, recently ended. */
export interface JobLists {
  active: JobLine[];
  moreActive: number;
  pending: JobLine[];
  recent: JobLine[];
}

/**
 * Most bytes of whole job documents one refresh reads, for jobs without a summary (written by an earlier version):
 * the rest of a refresh — the index, the term history, at most 35 summaries of 4 KiB — stays well within 1 MiB.
 */
export const WHOLE_DOCUMENT_READ_BYTES = 512 * 1024;

/**
 * A job as the page lists it, from its summary (or, while it is pending, its spec): the page never holds a job's
 * bitmaps, aggregate or failure list.
 */
export interface JobLine {
  id: string;
  kind: string;
  status: JobStatus["status"];
  failureReason?: string;
  progress: JobStatus["progress"];
  createdAt: string;
  completedAt: string | undefined;
  /** When the job completed, was cancelled or expired. */
  endedAt?: string;
  lastEpoch: number | undefined;
  /** Its most frequent recorded failure reasons, most frequent first. */
  reasons: ReasonCount[];
  /** How many failures were recorded with their reason. */
  recordedFailures: number;
}

/** A job's line from its summary. */
export function lineFromSummary(id: string, summary: JobSummary): JobLine {
  const iso = (ms: number | undefined): string | undefined =>
    ms === undefined ? undefined : new Date(ms).toISOString();
  return {
    id,
    kind: summary.kind,
    status: summary.status,
    ...(summary.failureReason === undefined ? {} : { failureReason: summary.failureReason }),
    progress: {
      total: summary.itemCount,
      dispatched: summary.dispatched,
      done: summary.doneCount,
      failed: summary.failedCount,
      skipped: summary.skippedCount ?? 0,
      ...(summary.heldCount === undefined ? {} : { held: summary.heldCount }),
    },
    createdAt: new Date(summary.createdAtMs).toISOString(),
    completedAt: iso(summary.completedAtMs),
    ...(summary.completedAtMs !== undefined || summary.endedAtMs !== undefined
      ? { endedAt: iso(summary.completedAtMs ?? summary.endedAtMs) }
      : {}),
    lastEpoch: summary.lastEpoch,
    reasons: summary.reasons,
    recordedFailures: summary.recordedFailures,
  };
}

/** A job's line from its whole status (a pending job's, or one without a summary). */
export function lineFromStatus(status: JobStatus): JobLine {
  return {
    id: status.id,
    kind: status.kind,
    status: status.status,
    ...(status.failureReason === undefined ? {} : { failureReason: status.failureReason }),
    progress: status.progress,
    createdAt: status.createdAt,
    completedAt: status.completedAt,
    ...(status.endedAt === undefined ? {} : { endedAt: status.endedAt }),
    lastEpoch: status.lastEpoch,
    reasons: countReasons(
      status.failures.map((failure) => failure.reason),
      MAX_REASONS_SHOWN,
    ),
    recordedFailures: status.failures.length,
  };
}

/**
 * The jobs to list, each from its summary (one small request; never its document); one that cannot be read is a
 * problem of its own, and the others still show. A job without a summary (written by an earlier version) is read
 * whole while the refresh's {@link WHOLE_DOCUMENT_READ_BYTES} last, and named among the problems beyond them.
 */
export async function readJobs(sources: StatusSources, attempt: Attempt, io: Abortable): Promise<JobLists> {
  const [stored, markers] = await Promise.all([
    sources.state.read(keys.index, io),
    sources.system.list(keys.inboxPrefix, MAX_PENDING_JOBS_SHOWN, io),
  ]);
  const index: { active: string[]; recent: string[]; schedule?: Record<string, unknown> } =
    stored === undefined ? { active: [], recent: [] } : jobIndexSchema.parse(stored.value);
  let wholeBytesLeft = WHOLE_DOCUMENT_READ_BYTES;
  const readLine = async (id: string): Promise<JobLine | undefined> => {
    const read = await readJobSummary(sources.state, id, io);
    if (read?.ok === true) return lineFromSummary(id, read.summary);
    if (read !== undefined && read.bytes > wholeBytesLeft)
      throw new Error(
        `written by an earlier version, without a summary, and its state (${read.bytes} bytes) is more than a refresh reads: GET /api/jobs/${id} shows it`,
      );
    // No state: a job still in the inbox, shown from its spec — not read again from the state, which its registration
    // may have written meanwhile (a whole document; the simulator's seed 1108 caught a refresh doing that).
    if (read === undefined) {
      const pending = await readPendingStatus(sources.system, id, io);
      return pending === undefined ? undefined : lineFromStatus(pending);
    }
    wholeBytesLeft -= read.bytes;
    // No summary: a job written by an earlier version, its whole status, small here.
    const status = await readJobStatus(sources.state, sources.system, sources.registry, id, io);
    return status === undefined ? undefined : lineFromStatus(status);
  };
  const read = async (ids: readonly string[]): Promise<JobLine[]> => {
    const lines = await Promise.all(ids.map((id) => attempt(`job ${id}`, () => readLine(id), undefined)));
    return lines.filter((line): line is JobLine => line !== undefined);
  };
  // A job being registered right now has both a state and its inbox marker: it is listed once, as active.
  const submitted = markers
    .map((marker) => marker.slice(keys.inboxPrefix.length))
    .filter((id) => !index.active.includes(id));
  const [listed, pending, recent] = await Promise.all([
    read(index.active.slice(0, MAX_ACTIVE_JOBS_SHOWN)),
    read(submitted),
    read([...index.recent].reverse()), // newest first
  ]);
  // A job the index still lists as active may have ended already: the leader takes it off the list in the pass after
  // the fold that ended it (or the next step). It is shown by what it is, among the ended, newest first.
  // A registered job that waits for its notBefore (the index's entry says when) shows as scheduled.
  const nowMs = Date.now();
  const waiting = (line: JobLine): boolean =>
    line.status === "running" &&
    line.progress.dispatched === 0 &&
    scheduleOf(line.id, index.schedule?.[line.id]).notBeforeAtMs > nowMs;
  const active = listed
    .filter((line) => line.status === "running")
    .map((line): JobLine => (waiting(line) ? { ...line, status: "scheduled" } : line));
  const ended = listed.filter((line) => line.status !== "running");
  return {
    active,
    moreActive: Math.max(0, index.active.length - MAX_ACTIVE_JOBS_SHOWN),
    pending,
    recent: [...ended.reverse(), ...recent.filter((line) => !ended.some((job) => job.id === line.id))],
  };
}
