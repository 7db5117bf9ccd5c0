import { ZodError } from "zod";
import type { ReasonCount } from "../coordination/state/jobSummary.js";
import type { JobStatus } from "../coordination/jobs/status.js";
import { readTermHistory, type TermEntry } from "../coordination/state/termHistory.js";
import { readPoolViews, type PoolView } from "../coordination/state/grantLedger.js";
import { describeLeader, type LeaderInfo } from "../library/leadership/leaderInfo.js";
import type { Abortable } from "../library/util/delay.js";
import { readRetentionView, type RetentionView } from "./statusRetention.js";
import {
  MAX_REASONS_SHOWN,
  readJobs,
  type Attempt,
  type JobLine,
  type JobLists,
  type StatusSources,
} from "./statusJobs.js";

/**
 * The status page's view model: everything the page shows, read from storage without the lease (any instance may
 * serve it) and computed into plain values. Rendering is elsewhere (`renderStatusPage.ts`); this module decides what
 * is shown, so its tests need no HTML.
 */

/** How often the page refreshes itself, in ms. */
export const STATUS_REFRESH_MS = 5000;

/** Who leads now. */
export interface LeaderView {
  /** The holder, or undefined when nobody holds the lease (between ticks every leader releases). */
  holder: string | undefined;
  /** The latest term's epoch (0 before the first). */
  epoch: number;
  /** When the latest term began (ISO-8601). */
  since: string | undefined;
  /** How long ago the latest term began, for a person ("12 s"). */
  sinceAgo: string | undefined;
  transitions: number;
  leaseState: LeaderInfo["leaseState"];
  /** A pending or honoured step-down request. */
  revocation: { epoch: number; honoured: boolean } | undefined;
}

/** One term of the history, with where it sits on the timeline. */
export interface TermView {
  holder: string;
  epoch: number;
  since: string;
  sinceAgo: string;
  /** True when this term's leader holds the lease now. */
  current: boolean;
  /**
   * How long it lasted, for a person: to its last step's end, or to now while it leads; undefined when its end was not
   * recorded (its step failed, or a version before this one led).
   */
  lasted: string | undefined;
  /** How it ended: gave the lease back, lapsed (expired, broken, taken over), leads now, or not known (yet). */
  ended: "released" | "lapsed" | "leading now" | undefined;
  /** Position of its start on the timeline, 0 (oldest term) to 1 (now). */
  position: number;
  /** Position of its end on the timeline (now while it leads); undefined when not recorded. */
  endPosition: number | undefined;
  /** Index of its holder among `timeline.holders` (for a colour). */
  holderIndex: number;
}

export type { ReasonCount } from "../coordination/state/jobSummary.js";
export {
  MAX_ACTIVE_JOBS_SHOWN,
  MAX_PENDING_JOBS_SHOWN,
  MAX_REASONS_SHOWN,
  WHOLE_DOCUMENT_READ_BYTES,
  lineFromStatus,
  lineFromSummary,
  type Attempt,
  type JobLine,
  type JobLists,
  type StatusSources,
} from "./statusJobs.js";

/** One job's line. */
export interface JobView {
  id: string;
  kind: string;
  status: JobStatus["status"];
  /** Why a failed job stopped. */
  failureReason?: string;
  total: number;
  dispatched: number;
  done: number;
  failed: number;
  /** Shares of `total`, in percent (0–100), for the progress bar. */
  percent: { done: number; failed: number; dispatched: number };
  createdAt: string;
  completedAt: string | undefined;
  /** How long it ran (completed jobs) or has been running, for a person. */
  age: string;
  lastEpoch: number | undefined;
  /** Recorded failure reasons, most frequent first (at most {@link MAX_REASONS_SHOWN}). */
  reasons: ReasonCount[];
  /** Failed items whose reason was not kept (beyond the job's recorded-failure bound). */
  unrecordedFailures: number;
}

/** A poison queue and how many messages wait in it. */
export interface PoisonQueueView {
  queue: string;
  depth: number;
}

/** Everything the status page shows. */
export interface StatusView {
  renderedAt: string;
  refreshMs: number;
  leader: LeaderView | undefined;
  timeline: { terms: TermView[]; holders: string[]; start: string | undefined };
  jobs: { active: JobView[]; moreActive: number; pending: JobView[]; recent: JobView[] };
  failures: { items: number; jobsWithFailures: number; reasons: ReasonCount[] };
  poison: PoisonQueueView[];
  /** Ended jobs whose removal failed and is put off (retention trouble). */
  retention: RetentionView;
  /** Each limited pool (a kind's limit, one key's, a job's own): what is in use against it, and what waits. */
  limits: PoolView[];
  /** Parts that could not be read, with why; the rest of the page still shows. */
  problems: string[];
}

/** Options of {@link readStatusView}. */
export interface StatusViewOptions extends Abortable {
  /** Wall clock. @default Date.now */
  nowMs?: number;
}

/**
 * Reads everything the status page shows. A part that cannot be read (storage trouble, a document of another shape)
 * is listed in `problems` and the rest is still shown; only an abort rejects.
 */
export async function readStatusView(sources: StatusSources, options: StatusViewOptions = {}): Promise<StatusView> {
  const nowMs = options.nowMs ?? Date.now();
  const io: Abortable = { abortSignal: options.abortSignal };
  const problems: string[] = [];
  const attempt: Attempt = async (what, read, fallback) => {
    try {
      return await read();
    } catch (error) {
      options.abortSignal?.throwIfAborted();
      problems.push(`${what}: ${reasonOf(error)}`);
      return fallback;
    }
  };
  const [leader, terms, jobs, poison, retention, limits] = await Promise.all([
    attempt("leader", () => describeLeader(sources.leaseStore, io), undefined),
    attempt("term history", () => readTermHistory(sources.state, io), []),
    attempt("jobs", () => readJobs(sources, attempt, io), { active: [], moreActive: 0, pending: [], recent: [] }),
    Promise.all(
      [sources.workPoisonQueue, sources.resultsPoisonQueue].map(async (queue) => ({
        queue: queue.name,
        depth: await attempt(`poison queue ${queue.name}`, () => queue.approximateCount(io), Number.NaN),
      })),
    ),
    attempt("retention", () => readRetentionView(sources.system, io), { failures: [], more: false }),
    attempt("limits", () => readPoolViews(sources.state, nowMs, io), []),
  ]);
  return buildStatusView({ nowMs, leader, terms, jobs, poison, retention, limits, problems });
}

/** What {@link buildStatusView} computes the view from (what {@link readStatusView} read). */
export interface StatusSnapshot {
  nowMs: number;
  leader: LeaderInfo | undefined;
  /** The term history, oldest first. */
  terms: TermEntry[];
  jobs: JobLists;
  /** Depth NaN: could not be read (the reason is in `problems`). */
  poison: PoisonQueueView[];
  /** @default no retention trouble */
  retention?: RetentionView;
  /** @default no limited pools */
  limits?: PoolView[];
  problems: string[];
}

/** Computes the view from what was read. Pure: the unit tests drive it directly. */
export function buildStatusView(snapshot: StatusSnapshot): StatusView {
  const { nowMs, leader } = snapshot;
  const jobView = (job: JobLine): JobView => toJobView(job, nowMs);
  const listed = [...snapshot.jobs.active, ...snapshot.jobs.recent];
  const leaderView: LeaderView | undefined =
    leader === undefined
      ? undefined
      : {
          holder: leader.holder,
          epoch: leader.epoch,
          since: leader.since,
          sinceAgo: leader.since === undefined ? undefined : formatDuration(nowMs - Date.parse(leader.since)),
          transitions: leader.transitions,
          leaseState: leader.leaseState,
          revocation:
            leader.revokedEpoch === undefined
              ? undefined
              : { epoch: leader.revokedEpoch, honoured: leader.revocationHonoured },
        };
  return {
    renderedAt: new Date(nowMs).toISOString(),
    refreshMs: STATUS_REFRESH_MS,
    leader: leaderView,
    timeline: timelineOf(snapshot.terms, leader, nowMs),
    jobs: {
      active: snapshot.jobs.active.map(jobView),
      moreActive: snapshot.jobs.moreActive,
      pending: snapshot.jobs.pending.map(jobView),
      recent: snapshot.jobs.recent.map(jobView),
    },
    failures: {
      items: listed.reduce((sum, job) => sum + job.progress.failed, 0),
      jobsWithFailures: listed.filter((job) => job.progress.failed > 0).length,
      reasons: sumReasons(listed.flatMap((job) => job.reasons)),
    },
    poison: snapshot.poison,
    retention: snapshot.retention ?? { failures: [], more: false },
    limits: snapshot.limits ?? [],
    problems: snapshot.problems,
  };
}

/** A duration for a person: "850 ms", "12 s", "3 min 4 s", "2 h 5 min", "3 d 4 h". Negative (clock skew) reads as 0. */
export function formatDuration(ms: number): string {
  const safe = Number.isFinite(ms) ? Math.max(0, ms) : 0;
  if (safe < 1000) return `${Math.round(safe)} ms`;
  const s = Math.floor(safe / 1000);
  if (s < 60) return `${s} s`;
  const pair = (big: number, bigUnit: string, small: number, smallUnit: string): string =>
    small === 0 ? `${big} ${bigUnit}` : `${big} ${bigUnit} ${small} ${smallUnit}`;
  if (s < 3600) return pair(Math.floor(s / 60), "min", s % 60, "s");
  if (s < 86_400) return pair(Math.floor(s / 3600), "h", Math.floor((s % 3600) / 60), "min");
  return pair(Math.floor(s / 86_400), "d", Math.floor((s % 86_400) / 3600), "h");
}

function timelineOf(terms: TermEntry[], leader: LeaderInfo | undefined, nowMs: number): StatusView["timeline"] {
  const holders = [...new Set(terms.map((term) => term.holder))];
  const startMs = terms[0]?.sinceMs;
  const span = startMs === undefined ? 0 : nowMs - startMs;
  return {
    holders,
    start: startMs === undefined ? undefined : new Date(startMs).toISOString(),
    terms: terms.map((term) => {
      const current = leader?.holder === term.holder && leader.epoch === term.epoch;
      const endMs = current ? nowMs : term.endedAtMs;
      const at = (ms: number): number => (span <= 0 || startMs === undefined ? 1 : clamp01((ms - startMs) / span));
      return {
        holder: term.holder,
        epoch: term.epoch,
        since: new Date(term.sinceMs).toISOString(),
        sinceAgo: formatDuration(nowMs - term.sinceMs),
        current,
        lasted: endMs === undefined ? undefined : formatDuration(endMs - term.sinceMs),
        ended: current ? "leading now" : term.end,
        position: at(term.sinceMs),
        endPosition: endMs === undefined ? undefined : at(endMs),
        holderIndex: holders.indexOf(term.holder),
      };
    }),
  };
}

function toJobView(job: JobLine, nowMs: number): JobView {
  const { total, dispatched, done, failed } = job.progress;
  const share = (count: number): number => (total > 0 ? Math.round((count / total) * 1000) / 10 : 0);
  // A cancelled or expired job ended without completing: its duration stops at endedAt too.
  const ended = job.endedAt ?? job.completedAt;
  const endMs = ended === undefined ? nowMs : Date.parse(ended);
  return {
    id: job.id,
    kind: job.kind,
    status: job.status,
    ...(job.failureReason === undefined ? {} : { failureReason: job.failureReason }),
    total,
    dispatched,
    done,
    failed,
    percent: { done: share(done), failed: share(failed), dispatched: share(dispatched) },
    createdAt: job.createdAt,
    completedAt: job.completedAt,
    age: formatDuration(endMs - Date.parse(job.createdAt)),
    lastEpoch: job.lastEpoch,
    reasons: job.reasons.slice(0, MAX_REASONS_SHOWN),
    unrecordedFailures: Math.max(0, failed - job.recordedFailures),
  };
}

/** Adds up the counts of equal reasons over jobs, most frequent first, at most {@link MAX_REASONS_SHOWN}. */
function sumReasons(counts: readonly ReasonCount[]): ReasonCount[] {
  const sums = new Map<string, number>();
  for (const { reason, count } of counts) sums.set(reason, (sums.get(reason) ?? 0) + count);
  return [...sums]
    .map(([reason, count]) => ({ reason, count }))
    .sort((a, b) => b.count - a.count)
    .slice(0, MAX_REASONS_SHOWN);
}

/** Why a read failed, in one line: a document of another shape names each field that is wrong. */
function reasonOf(error: unknown): string {
  if (error instanceof ZodError)
    return `not in a shape this version reads: ${error.issues
      .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
      .join("; ")}`;
  return error instanceof Error ? error.message : String(error);
}

function clamp01(value: number): number {
  return Math.min(1, Math.max(0, value));
}
