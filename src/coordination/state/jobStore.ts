import { ConcurrentUpdateError } from "../../library/errors.js";
import type { FencedStateStore, Versioned } from "../../library/fencing/FencedStateStore.js";
import {
  RECENT_JOBS_LIMIT,
  UnreadableJobError,
  jobIndexSchema,
  jobStateSchema,
  keys,
  readJobDocument,
  type JobIndex,
  type JobState,
} from "./jobState.js";
import type { Abortable } from "../../library/util/delay.js";
import type { ScheduleEntry } from "./jobSchedule.js";
import { summarizeJob } from "./jobSummary.js";
import { LedgerStore } from "./grantLedger.js";

/**
 * How many times a job write that lost a race (ConcurrentUpdateError) is retried after a re-read. The race the README
 * allows — a stale leader's write landing between this leader's read and write — leaves the job one version newer.
 */
export const JOB_WRITE_RETRIES = 3;

/**
 * Typed reads and writes of the job index and job states through the fenced store. One store serves one step, and
 * remembers the latest version of each document it read or wrote: {@link latestIndex} and {@link latestJob} answer
 * from it, so a step reads the index and a job once, not in every pass (issue 35: most of the leader's reads while a
 * job waits on its workers). Safe because every write of these documents is the leader's, conditional on the version
 * it read: a version written by anyone else meanwhile (a newer leader, a stale one) makes this store's next write fail
 * and re-read (`updateJob`, `updateIndex`), and what a pass decided from the older version is what it could have
 * decided from a read just before that write. A write that fails forgets the version it was made over.
 */
export class JobStore {
  private index: Versioned<JobIndex> | undefined;
  private readonly jobs = new Map<string, Versioned<JobState>>();
  /** The grant ledger (flow control's shares handed out), through the same fenced store, remembered the same way. */
  readonly ledger: LedgerStore;

  constructor(private readonly fenced: FencedStateStore) {
    this.ledger = new LedgerStore(fenced);
  }

  /** The epoch of the term that writes through this store. */
  get epoch(): number {
    return this.fenced.epoch;
  }

  /** Reads the job index from storage. */
  readIndex(options: Abortable = {}): Promise<Versioned<JobIndex> | undefined> {
    return this.fenced
      .read(keys.index, (value) => jobIndexSchema.parse(value), options)
      .then((read) => {
        this.index = read;
        return read;
      });
  }

  /** The job index as this store last read or wrote it; read from storage when it has not. */
  latestIndex(options: Abortable = {}): Promise<Versioned<JobIndex> | undefined> {
    return this.index === undefined ? this.readIndex(options) : Promise.resolve(this.index);
  }

  /**
   * Adds job ids to the active list (with their scheduling entries, `schedule`, for those that have one), or moves
   * ended ones from it to the bounded recent list, forgets removed ones (from both lists), and sets where the next
   * pass starts (`resumeAt`: a job id, or null for the top; undefined leaves it) — a read-modify-write with retry,
   * fenced like every write. A scheduling entry goes with its job off the active list. Fields of the index this
   * version does not know are written back unchanged.
   */
  async updateIndex(
    change: {
      add?: string[];
      schedule?: Readonly<Record<string, ScheduleEntry>>;
      remove?: string[];
      forget?: string[];
      resumeAt?: string | null;
      sweptAtMs?: number;
    },
    options: Abortable = {},
  ): Promise<void> {
    const forget = new Set(change.forget ?? []);
    this.index = undefined; // until the update lands: a failed one leaves the next reader to read
    this.index = await this.fenced.update(
      keys.index,
      (value) => jobIndexSchema.parse(value),
      (current) => {
        const active = new Set(current?.active ?? []);
        const ended = (change.remove ?? []).filter((id) => active.delete(id));
        for (const id of change.add ?? []) active.add(id);
        for (const id of forget) active.delete(id);
        const resumeAt = change.resumeAt === undefined ? current?.resumeAt : (change.resumeAt ?? undefined);
        const recent = [...(current?.recent ?? []).filter((id) => !ended.includes(id)), ...ended]
          .filter((id) => !forget.has(id))
          .slice(-RECENT_JOBS_LIMIT);
        const schedule = nextSchedule(current?.schedule, change.schedule, active);
        if (
          current !== undefined &&
          ended.length === 0 &&
          active.size === current.active.length &&
          recent.length === current.recent.length &&
          resumeAt === current.resumeAt &&
          change.sweptAtMs === undefined &&
          JSON.stringify(schedule ?? {}) === JSON.stringify(current.schedule ?? {})
        )
          return undefined;
        // Fields this version does not know (a newer version's) are kept, as every stored document's are.
        const next: JobIndex = {
          ...current,
          v: 1,
          active: [...active],
          recent,
          ...(change.sweptAtMs === undefined ? {} : { sweptAtMs: change.sweptAtMs }),
        };
        if (resumeAt === undefined) delete next.resumeAt;
        else next.resumeAt = resumeAt;
        if (schedule === undefined) delete next.schedule;
        else next.schedule = schedule;
        return next;
      },
      options,
    );
  }

  /**
   * Reads a job's state. @throws UnreadableJobError naming why when it is not one this version reads (a newer
   *   version's, or damaged).
   */
  readJob(id: string, options: Abortable = {}): Promise<Versioned<JobState> | undefined> {
    this.jobs.delete(id);
    return this.fenced
      .read(
        keys.jobState(id),
        (value) => {
          const job = readJobDocument(jobStateSchema, "its state", value);
          if (!job.ok) throw new UnreadableJobError(id, job.reason);
          return job.value;
        },
        options,
      )
      .then((read) => {
        if (read !== undefined) this.jobs.set(id, read);
        return read;
      });
  }

  /**
   * A job's state as this store last read or wrote it; read from storage ({@link readJob}) when it has not. @throws
   *   as {@link readJob}.
   */
  latestJob(id: string, options: Abortable = {}): Promise<Versioned<JobState> | undefined> {
    const known = this.jobs.get(id);
    return known === undefined ? this.readJob(id, options) : Promise.resolve(known);
  }

  /** A job's state as this store last read or wrote it, without reading storage; undefined when it has not. */
  knownJob(id: string): Versioned<JobState> | undefined {
    return this.jobs.get(id);
  }

  /**
   * Read-modify-write of a job: `change` gets the current state and returns the next one, or undefined to leave it.
   * A write that loses a race is retried on a fresh read, at most {@link JOB_WRITE_RETRIES} times, so `change` must be
   * pure (it may run again). `first` is a version already read, used for the first attempt.
   *
   * @returns the version written, the current one when `change` left it, or undefined when there is no such job.
   * @throws StaleEpochError when a newer epoch wrote the job (this leader must stop); ConcurrentUpdateError when every
   *   attempt lost.
   */
  async updateJob(
    id: string,
    change: (state: JobState) => JobState | undefined,
    options: Abortable = {},
    first?: Versioned<JobState>,
  ): Promise<Versioned<JobState> | undefined> {
    let current = first ?? (await this.readJob(id, options));
    for (let retry = 0; current !== undefined; retry++) {
      const next = change(current.value);
      if (next === undefined) return current;
      try {
        return await this.writeJob(next, current, options);
      } catch (error) {
        if (!(error instanceof ConcurrentUpdateError) || retry >= JOB_WRITE_RETRIES) throw error;
      }
      current = await this.readJob(id, options);
    }
    return undefined;
  }

  /**
   * Deletes a job's state, only if it is still the version read (its ETag and epoch: `StateStore.readSummary`), fenced
   * like a write. @throws StaleEpochError / ConcurrentUpdateError as a write.
   */
  deleteJob(id: string, version: { etag: string; epoch: number }, options: Abortable = {}): Promise<void> {
    this.jobs.delete(id);
    return this.fenced.delete(keys.jobState(id), version, options);
  }

  /**
   * Writes a job state over the version read (or creates it), with its summary (`summarizeJob`) in the same write: what
   * the status page reads instead of the document. Throws StaleEpochError / ConcurrentUpdateError.
   */
  writeJob(
    state: JobState,
    previous: Versioned<JobState> | undefined,
    options: Abortable = {},
  ): Promise<Versioned<JobState>> {
    const next = { ...state, lastEpoch: this.fenced.epoch };
    this.jobs.delete(state.id); // until the write lands: a failed one leaves the next reader to read
    return this.fenced
      .write(keys.jobState(state.id), next, previous, { ...options, summary: summarizeJob(next) })
      .then((written) => {
        this.jobs.set(state.id, written);
        return written;
      });
  }
}

/**
 * The index's scheduling entries after a change: the current ones with the added jobs' entries, each kept only while
 * its job is active; undefined when none is left (an index of jobs without scheduling has no such field).
 */
function nextSchedule(
  current: Readonly<Record<string, unknown>> | undefined,
  added: Readonly<Record<string, ScheduleEntry>> | undefined,
  active: ReadonlySet<string>,
): Record<string, unknown> | undefined {
  const entries = Object.entries({ ...current, ...added }).filter(([id]) => active.has(id));
  return entries.length === 0 ? undefined : Object.fromEntries(entries);
}
