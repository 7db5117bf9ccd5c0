import { randomUUID } from "node:crypto";
import { z } from "zod";
import {
  MAX_INLINE_ITEM_BYTES,
  MAX_PARAMS_BYTES,
  inputBlobName,
  submittedItemSchema,
  type ItemInput,
} from "../ports/messages.js";
import { keys, type JobSpec, type StoredKindLimits, type StoredLimits } from "../state/jobState.js";
import { poolProblems } from "../kinds/kindLimits.js";
import { storedLimitsOfKind } from "../flow/pools.js";
import type { FieldError } from "../state/jobStatus.js";
import type { BlobFiles } from "../ports/ports.js";
import { scheduleFormatVersion } from "../state/jobSchedule.js";
import { checkNotBefore, scheduleFieldsShape, storedSchedule } from "./scheduleFields.js";
import { idempotencyKeySchema } from "./idempotency.js";

export type { FieldError } from "../state/jobStatus.js";
import type { TaskRegistry } from "../kinds/taskRegistry.js";
import type { Abortable } from "../../library/util/delay.js";

/** Most items in one job. */
export const MAX_ITEMS_PER_JOB = 1_000_000;
/**
 * Items per stored chunk of a manifest's job (its items are read line by line, so their sizes are not known ahead),
 * and the fewest of any job: the leader reads one chunk per this many dispatched items.
 */
export const CHUNK_SIZE = 1000;
/** Most items per stored chunk (a job whose items are all small). */
export const MAX_CHUNK_SIZE = 16_384;
/** The text a chunk of an inline submission is sized to hold at most (unless its items need {@link CHUNK_SIZE}). */
export const CHUNK_TARGET_CHARS = 1024 * 1024;

/**
 * Items per chunk for a submission whose items are all in hand: as many as keep every chunk within
 * {@link CHUNK_TARGET_CHARS} of JSON by its longest item, at least {@link CHUNK_SIZE} and at most
 * {@link MAX_CHUNK_SIZE}. Each chunk is one blob write (billed $5.50 per million) and one read: 20,000 items of 91
 * bytes (about 120 characters of JSON each) fit 3 chunks, not 20 (issue 24). A job's chunk size is one number
 * (dispatch finds item i in chunk ⌊i ÷ chunkSize⌋), so it is sized by the longest item; a manifest's items cannot be,
 * and keep {@link CHUNK_SIZE}.
 */
export function chunkSizeFor(items: readonly ItemInput[]): number {
  let longest = 0;
  for (const item of items) longest = Math.max(longest, JSON.stringify(item).length);
  const fitting = Math.floor((CHUNK_TARGET_CHARS - 2) / (longest + 1));
  return Math.min(MAX_CHUNK_SIZE, Math.max(CHUNK_SIZE, fitting));
}

/** Furthest a job's deadline may lie ahead: 7 days, in seconds. */
export const MAX_DEADLINE_S = 7 * 24 * 3600;

/** The fields of a submission, as an error about an unknown field lists them. */
const SUBMISSION_FIELDS = [
  "kind",
  "params",
  "items",
  "manifest",
  "deadline",
  "timeoutS",
  "priority",
  "fairnessKey",
  "notBefore",
  "idempotencyKey",
  "limits",
] as const;

/**
 * A job submission as users send it: its items inline in the body, or named in a manifest blob (exactly one of the
 * two; {@link validateSubmission} checks that and the deadline beside the fields' own checks, to report every problem).
 */
export const submissionSchema = z.strictObject(
  {
    kind: z.string().min(1).max(64),
    /** The kind's params, validated by its schema; absent for a kind that takes none. */
    params: z.unknown().optional(),
    items: z
      .array(submittedItemSchema)
      .min(1, "a job needs at least one item")
      .max(MAX_ITEMS_PER_JOB, `at most ${MAX_ITEMS_PER_JOB} items per job`)
      .optional(),
    /** An NDJSON blob in the input container, one item per line (see `manifest.ts`). */
    manifest: inputBlobName.optional(),
    /** ISO 8601 time with a zone (`Z` or an offset) after which the leader ends the job as `expired`. */
    deadline: z.iso
      .datetime({ offset: true, message: "must be an ISO 8601 time with a time zone, e.g. 2026-05-01T12:00:00Z" })
      .optional(),
    /** The same as a number of seconds from submission. */
    timeoutS: z
      .number()
      .int(`must be a whole number of seconds from 1 to ${MAX_DEADLINE_S}`)
      .min(1, `must be a whole number of seconds from 1 to ${MAX_DEADLINE_S}`)
      .max(MAX_DEADLINE_S, `at most ${MAX_DEADLINE_S} s (7 days)`)
      .optional(),
    /** Scheduling: `priority`, `fairnessKey`, `notBefore` (`scheduleFields.ts`). */
    ...scheduleFieldsShape,
    /** The submission is made once under this key (`idempotency.ts`); a retry with it gets the first job's id. */
    idempotencyKey: idempotencyKeySchema.optional(),
    /**
     * The job's own limits, `{ concurrency?, rate? }`: its items count against them besides its kind's (checked by
     * {@link validateSubmission}, field by field).
     */
    limits: z.custom<JobLimits>((value) => poolProblems("limits", value).length === 0).optional(),
  },
  {
    error: (issue) => {
      if (issue.code === "unrecognized_keys")
        return `unknown field${issue.keys.length === 1 ? "" : "s"} ${issue.keys.map((key) => JSON.stringify(key)).join(", ")}; a submission has ${SUBMISSION_FIELDS.join(", ")}`;
      return undefined;
    },
  },
);
export type Submission = z.infer<typeof submissionSchema>;
/** A submission with its items in the body. */
export type ItemsSubmission = JobHeader & { items: ItemInput[] };
/**
 * What a job's spec takes from its submission besides the items, and its kind's limits as the submitter knows them
 * (kept with the job for a leader that lacks the kind).
 */
export type JobHeader = Pick<
  Submission,
  "kind" | "params" | "deadline" | "timeoutS" | "priority" | "fairnessKey" | "notBefore" | "idempotencyKey" | "limits"
> & { kindLimits?: StoredKindLimits | undefined };

/** A job's own limits, as a submission gives them (and its spec keeps them). */
export type JobLimits = StoredLimits;

/** Validation result: the submission (with its kind's limits, to keep with the job), or every field error. */
export type ValidatedSubmission =
  { ok: true; value: Submission & { kindLimits?: StoredKindLimits | undefined } } | { ok: false; errors: FieldError[] };

/**
 * Validates a submission, including the task kind's own params and its deadline against `nowMs`, and returns every
 * problem at once: each check runs on the fields it reads when they are well-formed, whatever else is wrong.
 */
export function validateSubmission(body: unknown, registry: TaskRegistry, nowMs = Date.now()): ValidatedSubmission {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    return {
      ok: false,
      errors: [{ field: "(body)", message: `a job submission is a JSON object with ${SUBMISSION_FIELDS.join(", ")}` }],
    };
  const parsed = submissionSchema.safeParse(body);
  const issues = parsed.success ? [] : parsed.error.issues;
  // One message a field once: a field that fails several checks of one message (a key both empty and not ASCII).
  const errors: FieldError[] = [
    ...new Map(
      issues
        .filter((issue) => issue.path[0] !== "limits")
        .map((issue) => {
          const error = { field: issue.path.join(".") || "(body)", message: issue.message };
          return [`${error.field}\n${error.message}`, error] as const;
        }),
    ).values(),
  ];
  // The job's limits, field by field, as a kind's are checked.
  if ("limits" in body && body.limits !== undefined) errors.push(...poolProblems("limits", body.limits));
  // The checks across fields run on the fields the schema did not refuse.
  const faulty = new Set(issues.map((issue) => String(issue.path[0] ?? "")));
  const submission: Partial<Submission> = parsed.success ? parsed.data : body;
  errors.push(...acrossFields(submission, faulty, nowMs));
  const params = faulty.has("kind") ? undefined : checkKind(submission.kind, submission.params, registry);
  if (params !== undefined && !params.ok) errors.push(...params.errors);
  if (!parsed.success || params === undefined || !params.ok || errors.length > 0) return { ok: false, errors };
  const kind = registry.get(parsed.data.kind);
  const kindLimits = kind === undefined ? undefined : storedLimitsOfKind(kind);
  return {
    ok: true,
    value: { ...parsed.data, params: params.value, ...(kindLimits === undefined ? {} : { kindLimits }) },
  };
}

/** The checks across fields: exactly one of items or manifest, and the deadline (`faulty`: fields to skip). */
function* acrossFields(
  submission: Partial<Submission>,
  faulty: ReadonlySet<string>,
  nowMs: number,
): Generator<FieldError> {
  const hasItems = submission.items !== undefined;
  if (hasItems === (submission.manifest !== undefined))
    yield {
      field: hasItems ? "manifest" : "items",
      message:
        'give exactly one of "items" (an array of items) or "manifest" (the name of an NDJSON blob in the input container, one item per line)',
    };
  if (submission.deadline !== undefined && submission.timeoutS !== undefined)
    yield { field: "deadline", message: "give either deadline or timeoutS, not both" };
  else if (!faulty.has("deadline")) {
    const deadlineError = checkDeadline(submission, nowMs);
    if (deadlineError !== undefined) yield deadlineError;
  }
  if (!faulty.has("notBefore")) {
    const deadlineKnown = !faulty.has("deadline") && !faulty.has("timeoutS");
    const deadlineAtMs = deadlineKnown ? deadlineOf(submission, nowMs) : undefined;
    const notBeforeError = checkNotBefore(submission.notBefore, deadlineAtMs, nowMs);
    if (notBeforeError !== undefined) yield notBeforeError;
  }
}

/** The task kind is known, and its params parse by its schema within {@link MAX_PARAMS_BYTES} as JSON. */
function checkKind(
  name: unknown,
  rawParams: unknown,
  registry: TaskRegistry,
): { ok: true; value: unknown } | { ok: false; errors: FieldError[] } {
  const kind = typeof name === "string" ? registry.get(name) : undefined;
  if (kind === undefined)
    return {
      ok: false,
      errors: [
        {
          field: "kind",
          message: `unknown task kind ${JSON.stringify(name)}; known kinds: ${registry.names().join(", ")}`,
        },
      ],
    };
  // Stored and sent as null when absent (every stored spec and work message carries params): the kind sees null.
  const params = kind.parseParams(rawParams ?? null);
  if (!params.ok)
    return {
      ok: false,
      errors: params.issues.map((issue) => ({
        field: issue.path === "" ? "params" : `params.${issue.path}`,
        message: issue.message,
      })),
    };
  const paramsBytes = Buffer.byteLength(JSON.stringify(params.value ?? null));
  if (paramsBytes > MAX_PARAMS_BYTES)
    return {
      ok: false,
      errors: [
        {
          field: "params",
          message: `params are ${paramsBytes} bytes as JSON; at most ${MAX_PARAMS_BYTES} are allowed (every work message carries them, beside items of up to ${MAX_INLINE_ITEM_BYTES} bytes)`,
        },
      ],
    };
  return { ok: true, value: params.value };
}

/** The wall-clock ms a submission's `deadline` or `timeoutS` stands for, submitted at `nowMs`; undefined for none. */
export function deadlineOf(submission: Pick<Submission, "deadline" | "timeoutS">, nowMs: number): number | undefined {
  if (submission.timeoutS !== undefined) return nowMs + submission.timeoutS * 1000;
  return submission.deadline === undefined ? undefined : Date.parse(submission.deadline);
}

/** A well-formed `deadline` (given without `timeoutS`) lies ahead, at most 7 days. */
function checkDeadline(submission: Partial<Submission>, nowMs: number): FieldError | undefined {
  if (submission.deadline === undefined) return undefined;
  const atMs = deadlineOf(submission, nowMs) ?? nowMs;
  if (atMs <= nowMs)
    return { field: "deadline", message: `must be in the future (it is now ${new Date(nowMs).toISOString()})` };
  if (atMs > nowMs + MAX_DEADLINE_S * 1000)
    return { field: "deadline", message: `must be at most 7 days (${MAX_DEADLINE_S} s) ahead` };
  return undefined;
}

/**
 * Stores a validated submission with its items for the leader to pick up, in the system container: item chunks, then
 * the spec, then an inbox marker (last, so the leader never sees a half-written job). No coordinator state is written:
 * that is the leader's, fenced.
 */
export async function storeSubmission(
  system: BlobFiles,
  submission: ItemsSubmission,
  options: WriterOptions = {},
): Promise<{ id: string; itemCount: number; stored: boolean }> {
  // `chunkSize`: internal, no request sets it (the simulator's jobs of a few dozen items in several chunks).
  const writer = new JobWriter(system, { ...options, chunkSize: options.chunkSize ?? chunkSizeFor(submission.items) });
  try {
    for (const item of submission.items) await writer.add(item);
    return await writer.commit(submission);
  } catch (error) {
    await writer.abandonAfterFailure();
    throw error;
  }
}

/** Chunks written at once. */
const WRITE_PARALLELISM = 16;

/** Options of a {@link JobWriter} (see its constructor). */
export interface WriterOptions extends Abortable {
  now?: () => number;
  chunkSize?: number;
  id?: string;
  once?: boolean;
}

/**
 * Writes one new job's blobs: items in chunks as they come, then the spec and the inbox marker; or removes what it
 * wrote. Up to {@link WRITE_PARALLELISM} chunk writes are in flight while more items arrive (a manifest is still being
 * read); the first that fails fails the next `add` or `commit` with its error, and no failed write is ever left
 * without a handler (an unhandled rejection would end the process).
 */
export class JobWriter {
  readonly id: string;
  private pending: ItemInput[] = [];
  private chunks = 0;
  /** The length of each chunk's text, in order (the spec's `chunkChars`). */
  private readonly chunkChars: number[] = [];
  private count = 0;
  private blobItems = 0;
  /** Chunk writes in flight; none rejects: a failure is kept in `failure`. */
  private writes: Promise<void>[] = [];
  /** The first chunk write that failed, if any. */
  private failure: { error: unknown } | undefined;

  private readonly chunkSize: number;

  /**
   * `options.chunkSize`: items per chunk (@default {@link CHUNK_SIZE}, for items whose sizes are not known ahead).
   * `options.id`: the job's id (@default a new UUID). `options.once`: the job of an idempotency claim, which other
   * submitters of the same submission may be writing at the same time, byte for byte the same: its spec is created only
   * if absent ({@link commit}), and a write that fails removes nothing ({@link abandonAfterFailure}).
   */
  constructor(
    private readonly system: BlobFiles,
    private readonly options: WriterOptions,
  ) {
    this.chunkSize = options.chunkSize ?? CHUNK_SIZE;
    this.id = options.id ?? randomUUID();
  }

  /** Items added so far. */
  get itemCount(): number {
    return this.count;
  }

  async add(item: ItemInput): Promise<void> {
    this.throwIfFailed();
    this.pending.push(item);
    this.count++;
    if ("blob" in item) this.blobItems++;
    if (this.pending.length === this.chunkSize) await this.flush();
  }

  /**
   * Writes the last chunk, the spec, then the inbox marker: the job exists for the leader from that moment. With
   * `once`, the spec is created only if absent: `stored` is false when another writer's was there (its inbox marker is
   * then the caller's to check: that writer may have died before writing it).
   */
  async commit(submission: JobHeader): Promise<{ id: string; itemCount: number; stored: boolean }> {
    const itemCount = this.itemCount;
    await this.flush();
    await this.settle();
    const createdAtMs = (this.options.now ?? Date.now)();
    const deadlineAtMs = deadlineOf(submission, createdAtMs);
    const schedule = storedSchedule(submission);
    const spec: JobSpec = {
      // Limits, like scheduling, are what a leader of version 1 would ignore.
      v: submission.limits !== undefined || submission.kindLimits !== undefined ? 2 : scheduleFormatVersion(schedule),
      id: this.id,
      kind: submission.kind,
      params: submission.params,
      itemCount,
      chunkSize: this.chunkSize,
      createdAtMs,
      ...(deadlineAtMs !== undefined ? { deadlineAtMs } : {}),
      ...(submission.limits !== undefined ? { limits: submission.limits } : {}),
      ...(submission.kindLimits !== undefined ? { kindLimits: submission.kindLimits } : {}),
      blobItems: this.blobItems,
      chunkChars: this.chunkChars,
      ...schedule,
    };
    const text = JSON.stringify(spec);
    if (this.options.once === true) {
      if (!(await this.system.createText(keys.spec(this.id), text, this.options)))
        return { id: this.id, itemCount, stored: false };
    } else await this.system.writeText(keys.spec(this.id), text, this.options);
    await this.system.writeText(keys.inbox(this.id), "", this.options);
    return { id: this.id, itemCount, stored: true };
  }

  /**
   * After a write failed: what {@link abandon} does, except for the job of an idempotency claim, whose chunks other
   * submitters of the same submission may share: left for a retry to complete (it writes the same bytes).
   */
  async abandonAfterFailure(): Promise<void> {
    if (this.options.once === true) await Promise.allSettled(this.writes.splice(0));
    else await this.abandon();
  }

  /** Deletes the chunks written so far (best effort: without a spec and a marker they are never read). */
  async abandon(): Promise<void> {
    await Promise.all(this.writes.splice(0));
    const written = Array.from({ length: this.chunks }, (_, chunk) => keys.chunk(this.id, chunk));
    for (let start = 0; start < written.length; start += WRITE_PARALLELISM) {
      await Promise.allSettled(
        written.slice(start, start + WRITE_PARALLELISM).map((name) => this.system.delete(name, this.options)),
      );
    }
  }

  private async flush(): Promise<void> {
    if (this.pending.length === 0) return;
    const text = JSON.stringify(this.pending);
    this.chunkChars.push(text.length);
    this.writes.push(
      this.system.writeText(keys.chunk(this.id, this.chunks++), text, this.options).catch((error: unknown) => {
        this.failure ??= { error };
      }),
    );
    this.pending = [];
    if (this.writes.length >= WRITE_PARALLELISM) await this.settle();
  }

  /** Waits for the writes in flight; throws the first failure. */
  private async settle(): Promise<void> {
    await Promise.all(this.writes.splice(0));
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure !== undefined) throw this.failure.error;
  }
}
