import { z } from "zod";
import { StorageError } from "../../library/errors.js";
import type { StateStore } from "../../library/fencing/StateStore.js";
import type { Abortable } from "../../library/util/delay.js";
import type { RunStatus } from "./jobStatus.js";
import { describeIssues, type ItemInput } from "../ports/messages.js";
import { storedScheduleShape } from "./jobSchedule.js";

/**
 * Stored documents (specs, job states, the index, the term history) are read with `looseObject`: fields this version
 * does not know — written by a newer version during a rolling deploy — are kept, and written back unchanged by every
 * read-modify-write. A document of a newer format version (`v`) is not read at all. Queue messages, which come from
 * outside, stay strict.
 */

/** Most item chunks a job has: `MAX_ITEMS_PER_JOB` ÷ `CHUNK_SIZE` (`submit.ts`), the fewest items a chunk holds. */
export const MAX_CHUNKS_PER_JOB = 1000;

/** A stored rate limit (a kind's or a job's), as submitted: checked before it was stored. */
const storedRateSchema = z.looseObject({
  limit: z.number().int().min(1),
  periodSeconds: z.number().int().min(1),
  burst: z.number().int().min(1).optional(),
});

/** Stored limits of one pool: items at once and starts per period. */
export const storedLimitsSchema = z.looseObject({
  concurrency: z.number().int().min(1).optional(),
  rate: storedRateSchema.optional(),
});
export type StoredLimits = z.infer<typeof storedLimitsSchema>;

/**
 * A kind's limits as its submitter knew them, kept with the job: a leader that lacks the kind (a deploy that adds it
 * to some instances first) still holds the job to them. Its `key` function cannot be stored: such a leader does not
 * send the job's items while the kind has per-key limits (`keyed`).
 */
export const storedKindLimitsSchema = storedLimitsSchema.extend({
  perKey: storedLimitsSchema.optional(),
  keyed: z.boolean().optional(),
});
export type StoredKindLimits = z.infer<typeof storedKindLimitsSchema>;

/**
 * The job spec the submitter writes (immutable); items are stored separately in chunks. Format version 2 is a job that
 * uses a scheduling field (`jobSchedule.ts`: priority, fairness key, not-before, idempotency key) or limits (its own,
 * or its kind's), which a leader of version 1 would ignore: it leaves such a spec in the inbox for a leader that reads
 * it. Every other job is version 1.
 */
export const jobSpecSchema = z.looseObject({
  v: z.union([z.literal(1), z.literal(2)]),
  id: z.string(),
  kind: z.string(),
  params: z.unknown(),
  itemCount: z.number().int().min(1),
  chunkSize: z.number().int().min(1),
  createdAtMs: z.number(),
  /**
   * Wall-clock ms after which the leader ends the job as `expired` (from the submission's `deadline` or `timeoutS`).
   */
  deadlineAtMs: z.number().optional(),
  /**
   * How many of the items name an input blob (the others are inline), counted by the submitter; the leader keeps
   * such a job's units small (`unitSize.ts`). Absent in specs written before it was counted: treated as "may".
   */
  blobItems: z.number().int().min(0).optional(),
  /**
   * The length of each item chunk's text (characters of JSON, as read), in chunk order, written by the submitter: the
   * leader reads ahead only chunks it knows to be small (`chunkCache.ts`), so it never holds several large ones. At
   * most {@link MAX_CHUNKS_PER_JOB} entries. Absent in specs written before it was recorded: no chunk is read ahead.
   */
  chunkChars: z.array(z.number().int().min(0)).max(MAX_CHUNKS_PER_JOB).optional(),
  /** The job's own limits (the submission's `limits`): its items count against them besides its kind's. */
  limits: storedLimitsSchema.optional(),
  /** Its kind's limits when it was submitted, for a leader that lacks the kind. */
  kindLimits: storedKindLimitsSchema.optional(),
  ...storedScheduleShape,
});
export type JobSpec = z.infer<typeof jobSpecSchema>;

/** A failed item and why. */
export const failureSchema = z.looseObject({ item: z.number().int(), reason: z.string() });
export type ItemFailure = z.infer<typeof failureSchema>;

/** Most failures kept with their reasons per job; beyond it only the count grows (bounded memory). */
export const MAX_RECORDED_FAILURES = 200;

/**
 * The leader's fenced state of one job. Its size grows with the item count by two bits per item (the bitmaps), and
 * with the number of distinct groups in the aggregate, never with the size of results.
 */
export const jobStateSchema = jobSpecSchema.extend({
  registeredAtMs: z.number(),
  /**
   * `failed`: the job as a whole could not go on (`failureReason` says why); `cancelled` (on request) and `expired`
   * (deadline passed): stopped by the leader. All three are final like `completed`, their counts kept as they were;
   * results arriving later are acknowledged, not counted.
   */
  status: z.enum(["running", "completed", "failed", "cancelled", "expired"]) satisfies z.ZodType<RunStatus>,
  failureReason: z.string().optional(),
  /**
   * How items are packed into work units — at most `unitMaxItems` items (chosen by `unitItemsFor` when the job
   * registered: WORK_UNIT_MAX_ITEMS or less) and `unitMaxBytes` bytes of JSON (WORK_UNIT_MAX_BYTES then): fixed for the
   * job's life, so a unit re-sent after a crash has the same items. A job registered before units had none: the
   * leader's current WORK_UNIT_MAX_ITEMS and WORK_UNIT_MAX_BYTES apply, as before.
   */
  unitMaxItems: z.number().int().min(1).optional(),
  unitMaxBytes: z.number().int().min(1).optional(),
  /** Items [0, dispatched) have been sent to the work queue at least once. */
  dispatched: z.number().int().min(0),
  /** Base64 bitmaps: items whose result has been folded, and items recorded as failed. */
  doneBits: z.string(),
  failedBits: z.string(),
  doneCount: z.number().int().min(0),
  failedCount: z.number().int().min(0),
  /**
   * Items whose failure the leader inferred and holds (`heldItems.ts`): a message named their unit without reporting
   * on it — a result it could not read, a work-poison message —, which is no proof that they failed. Neither done nor
   * failed: their unit's own result decides them; if none comes, they fail once the job has nothing else left and
   * `heldUntilMs` has passed. Their reasons are in `failures` meanwhile. Base64 bitmap; absent when none is held.
   */
  heldBits: z.string().optional(),
  /**
   * Wall-clock ms until which held items wait for their unit's own result: the last item held, plus
   * `INFERRED_FAILURE_HOLD_MS`. Absent when none is held.
   */
  heldUntilMs: z.number().optional(),
  /** The kind's partial result over every done item (validated by the kind's `partialSchema` when read). */
  aggregate: z.unknown(),
  failures: z.array(failureSchema),
  /** When the job ended (completed or failed). */
  completedAtMs: z.number().optional(),
  /** When the leader cancelled or expired the job; items neither done nor failed then are counted as skipped. */
  endedAtMs: z.number().optional(),
  skippedCount: z.number().int().min(0).optional(),
  /** Epoch of the leader that last changed this job; helps a person see who did what. */
  lastEpoch: z.number().int().min(0),
  /**
   * How many times a term whose predecessor lapsed has sent this job's units in flight again (`redispatch.ts`), at
   * most `MAX_REDISPATCHES`. Absent: never.
   */
  redispatches: z.number().int().min(0).optional(),
  /**
   * Units of a limited job to send again with a new grant, first: their grant expired without a report, or their
   * copy gave it back unstarted (`regrants`: how many grants the unit has had; `expiries`: how many of them expired;
   * `lost`: how many of its deliveries died or froze while running it; each absent for none). At most one entry per
   * unit in flight.
   */
  resend: z
    .array(
      z.looseObject({
        first: z.number().int().min(0),
        count: z.number().int().min(1),
        regrants: z.number().int().min(0),
        expiries: z.number().int().min(0).optional(),
        lost: z.number().int().min(0).optional(),
      }),
    )
    .optional(),
});
export type JobState = z.infer<typeof jobStateSchema>;

/** Statuses of a job the leader stopped before every item was done or failed. */
export type StoppedStatus = "cancelled" | "expired";

/** Whether the job was stopped early: its late results are discarded, not counted. */
export function isStopped(status: JobState["status"]): status is StoppedStatus {
  return status === "cancelled" || status === "expired";
}

/** Whether `id` can name a job (the ids `storeSubmission` makes); anything else names no job. */
export function isJobId(id: string): boolean {
  return /^[a-z0-9-]{1,63}$/.test(id);
}

/** How many ended jobs the index remembers (newest last), for the status page. */
export const RECENT_JOBS_LIMIT = 10;

/**
 * The leader's list of jobs not yet completed, and of the last {@link RECENT_JOBS_LIMIT} that ended (newest last). An
 * index written before `recent` existed reads as having none.
 */
export const jobIndexSchema = z.looseObject({
  v: z.literal(1),
  active: z.array(z.string()),
  recent: z.array(z.string()).default([]),
  /**
   * The active job the leader's next pass starts at: the first one the last step did not reach before its budget or
   * its bound of jobs per pass (`MAX_JOBS_PER_PASS`). Absent: from the top of the list.
   */
  resumeAt: z.string().optional(),
  /** When the leader last looked for ended jobs to remove (wall-clock ms; see `RETENTION_SWEEP_INTERVAL_MS`). */
  sweptAtMs: z.number().optional(),
  /**
   * The scheduling of the active jobs that have any (`jobSchedule.ts`, `scheduleEntrySchema`), by job id, written as
   * they register: a pass schedules every active job without reading its document. A job without an entry has the
   * default priority, is its own fairness key and may start at once. Each entry is read leniently (`scheduleOf`).
   */
  schedule: z.record(z.string(), z.unknown()).optional(),
});
export type JobIndex = z.infer<typeof jobIndexSchema>;

/** A time in ms as the 15 digits that name it in a marker (sorting by name sorts by time). */
function digits15(ms: number): string {
  return String(Math.max(0, Math.trunc(ms))).padStart(15, "0");
}

/** Where everything lives. `index` and `jobState` are in the state container; the others in the system container. */
export const keys = {
  index: "index.json",
  jobState: (id: string) => `jobs/${id}.json`,
  spec: (id: string) => `jobs/${id}/spec.json`,
  chunk: (id: string, chunk: number) => `jobs/${id}/items/${chunk}.json`,
  inboxPrefix: "inbox/",
  inbox: (id: string) => `inbox/${id}`,
  /** Everything of a job in the system container (spec, chunks, outcomes, …) is under this prefix. */
  jobPrefix: (id: string) => `jobs/${id}/`,
  /**
   * Retention markers of ended jobs (system container), named by when the job ended so a listing yields the oldest
   * first: `ended/<ms, 15 digits>-<id>`. The leader writes one as it takes a job off the active list, and removes the
   * job's blobs (the marker last) once it has been ended for JOB_RETENTION_HOURS.
   */
  endedPrefix: "ended/",
  ended: (id: string, endedAtMs: number) => `ended/${digits15(endedAtMs)}-${id}`,
  /**
   * Retention markers of ended jobs whose removal failed (a blob under a legal hold or an immutability policy), named
   * by when the removal is tried again, then when the job ended and the attempts so far:
   * `removal-retry/<ms, 15 digits>-<ms, 15 digits>-<attempts>-<id>`, so a listing yields the next due first. Its
   * content says why the last attempt failed (`{ v: 1, error }`).
   */
  removalRetryPrefix: "removal-retry/",
  removalRetry: (id: string, endedAtMs: number, attempts: number, retryAtMs: number) =>
    `removal-retry/${digits15(retryAtMs)}-${digits15(endedAtMs)}-${Math.max(1, Math.trunc(attempts))}-${id}`,
  /** Cancellation requests: written by the submitter, applied and removed by the leader. */
  cancelPrefix: "cancel/",
  cancel: (id: string) => `cancel/${id}`,
  partial: (id: string, item: number) => `jobs/${id}/partials/${item}.json`,
  /**
   * The blob (system container) holding the outcome of the unit of job `jobId` from item `first`, when its result names
   * an `outcomeBlob`. Not `jobs/<id>/partials/<n>.json`, where a worker writes a one-item (v1) partial: in a deploy
   * that mixes versions, a unit and a v1 item of the same number would overwrite each other's blob. Workers before this
   * name wrote unit outcomes there (`keys.partial(jobId, first)`), so the leader reads those too.
   */
  outcome: (id: string, first: number) => `jobs/${id}/outcomes/${first}.json`,
  /** Workers stop processing the job's items when this blob exists (see `jobStops.ts`). */
  stop: (id: string) => `jobs/${id}/stop`,
  /**
   * A granted unit's claim (system container): created if absent by the copy of the unit that runs it, holding that
   * copy's message id (`worker/grantedUnit.ts`); another copy of the unit finds it and starts nothing.
   */
  grantClaim: (id: string, grantId: string) => `jobs/${id}/grants/${grantId}`,
  /**
   * Idempotency claims (system container), one per idempotency key, named by the key's digest: created if absent before
   * any blob of the job it names, removed with that job (`jobs/idempotency.ts`).
   */
  claimPrefix: "idempotency/",
  claim: (keyDigest: string) => `idempotency/${keyDigest}`,
} as const;

/**
 * The length of a job's chunk's text when the job recorded it (`chunkChars`, one entry per chunk); undefined when not
 * known (a job submitted before it was recorded).
 */
export function chunkCharsOf(
  job: Pick<JobSpec, "itemCount" | "chunkSize" | "chunkChars">,
  chunk: number,
): number | undefined {
  const { chunkChars } = job;
  if (chunkChars?.length !== Math.ceil(job.itemCount / job.chunkSize)) return undefined;
  return chunkChars[chunk];
}

/** The newest format version (`v`) of the job specs and job states this version reads (it reads 1 and 2). */
export const JOB_FORMAT_VERSION = 2;

/** The `v` of a stored document, when it has a numeric one. */
export function formatVersion(json: unknown): number | undefined {
  return typeof json === "object" && json !== null && "v" in json && typeof json.v === "number" ? json.v : undefined;
}

/**
 * A job's stored state or spec is not one this version reads: a newer version wrote it during a rolling deploy, or it
 * is damaged. `message` names the document and why (each field that is wrong); the HTTP API answers 503 with it.
 */
export class UnreadableJobError extends Error {
  readonly code = "UnreadableJob";
  constructor(
    readonly jobId: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "UnreadableJobError";
  }
}

/** A stored job document as this version reads it: its value, or why this version cannot read it. */
export type ReadDocument<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * Reads a stored job document (`what`: "its state", "its spec") with `schema`. One of a newer format version, or of
 * a shape this version does not read — a newer version wrote it during a rolling deploy, or it is damaged — is not
 * an error but a reason, in one line, naming the document and each field that is wrong.
 */
export function readJobDocument<T>(schema: z.ZodType<T>, what: string, json: unknown): ReadDocument<T> {
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, value: parsed.data };
  const version = formatVersion(json);
  return {
    ok: false,
    reason:
      version !== undefined && version > JOB_FORMAT_VERSION
        ? `${what} is of format version ${version}; this version reads 1 to ${JOB_FORMAT_VERSION}: a newer version wrote it (a rolling deploy)`
        : `${what} is not in a shape this version reads (${describeIssues(parsed.error)}): a newer version wrote it (a rolling deploy), or it is damaged`,
  };
}

/**
 * A job's stored state as this version reads it, or why it cannot (a document of a newer version or another shape,
 * or a blob that is not JSON); undefined when there is none.
 */
export async function readJobState(
  state: StateStore,
  id: string,
  options: Abortable = {},
): Promise<ReadDocument<JobState> | undefined> {
  let stored;
  try {
    stored = await state.read(keys.jobState(id), options);
  } catch (error) {
    // The state store's word for a blob that is not JSON: damaged, not a storage failure.
    if (error instanceof StorageError && error.code === "CorruptState")
      return { ok: false, reason: `its state is damaged: ${error.message}` };
    throw error;
  }
  return stored === undefined ? undefined : readJobDocument(jobStateSchema, "its state", stored.value);
}

/** Item inputs of one chunk. */
export const chunkSchema = z.array(z.unknown());
export type Chunk = ItemInput[];
