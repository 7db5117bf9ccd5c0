import { createHash } from "node:crypto";
import { z } from "zod";

/**
 * A job's scheduling as stored (docs/how-to/limit.md): its priority, its fairness key (the tenant), the time before
 * which none of its items is dispatched, and its idempotency key. A job that uses none of them is stored as before
 * (format version 1); one that uses any is stored as version 2, which a leader of an earlier version leaves in the
 * inbox (`registerJobs.ts`) instead of running it without them. The leader's step needs the first three for every
 * active job in every pass, so registration copies them into the job index ({@link scheduleEntrySchema}), where they
 * cost no read of the job's document.
 */

/** The most urgent priority. */
export const MIN_PRIORITY = 1;
/** The least urgent priority. */
export const MAX_PRIORITY = 9;
/** The priority of a job that names none. */
export const DEFAULT_PRIORITY = 5;
/** Longest fairness key, in characters (UTF-16 code units, as JavaScript counts them). */
export const MAX_FAIRNESS_KEY_LENGTH = 128;
/** Longest fairness key, in bytes of UTF-8. */
export const MAX_FAIRNESS_KEY_BYTES = 256;
/** Longest idempotency key, in characters (printable ASCII: as many bytes). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;

/** The scheduling fields of a stored job spec (and state), each absent when the submission did not use it. */
export const storedScheduleShape = {
  /** 1 (most urgent) to 9; absent: {@link DEFAULT_PRIORITY}. */
  priority: z.number().int().min(MIN_PRIORITY).max(MAX_PRIORITY).optional(),
  /** The tenant the job is dispatched fairly against; absent: the job is its own. */
  fairnessKey: z.string().min(1).max(MAX_FAIRNESS_KEY_LENGTH).optional(),
  /** Wall-clock ms before which none of the job's items is dispatched (the leader's clock). */
  notBeforeAtMs: z.number().optional(),
  /** The key the submission was made once under (`jobs/idempotency.ts`); its claim names this job. */
  idempotencyKey: z.string().min(1).max(MAX_IDEMPOTENCY_KEY_LENGTH).optional(),
};

/** A job's scheduling fields, as stored. */
export interface StoredSchedule {
  priority?: number | undefined;
  fairnessKey?: string | undefined;
  notBeforeAtMs?: number | undefined;
  idempotencyKey?: string | undefined;
}

/**
 * The format version a job's spec and state are written in: 2 when it uses any scheduling field (a priority other than
 * the default, a fairness key, a not-before time, an idempotency key), else 1 — what every earlier version reads.
 */
export function scheduleFormatVersion(schedule: StoredSchedule): 1 | 2 {
  const uses =
    (schedule.priority !== undefined && schedule.priority !== DEFAULT_PRIORITY) ||
    schedule.fairnessKey !== undefined ||
    schedule.notBeforeAtMs !== undefined ||
    schedule.idempotencyKey !== undefined;
  return uses ? 2 : 1;
}

/** The stored scheduling fields of a spec or state that has them (none of them is undefined-valued). */
export function storedScheduleOf(schedule: StoredSchedule): StoredSchedule {
  const { priority, fairnessKey, notBeforeAtMs, idempotencyKey } = schedule;
  return {
    ...(priority !== undefined && priority !== DEFAULT_PRIORITY ? { priority } : {}),
    ...(fairnessKey !== undefined ? { fairnessKey } : {}),
    ...(notBeforeAtMs !== undefined ? { notBeforeAtMs } : {}),
    ...(idempotencyKey !== undefined ? { idempotencyKey } : {}),
  };
}

/**
 * A job's entry in the index (`schedule`, by job id): what the step schedules it by. The fairness key is stored as a
 * digest ({@link fairnessKeyDigest}): 16 characters whatever the key's length, so a thousand active jobs keep the
 * index small. Read leniently: an entry this version cannot read schedules its job as one without an entry.
 */
export const scheduleEntrySchema = z.looseObject({
  priority: z.number().int().min(MIN_PRIORITY).max(MAX_PRIORITY).optional(),
  fairnessKeyDigest: z.string().min(1).max(64).optional(),
  notBeforeAtMs: z.number().optional(),
});
export type ScheduleEntry = z.infer<typeof scheduleEntrySchema>;

/** A fairness key's digest as the index stores it: the first 16 hex digits of its SHA-256. */
export function fairnessKeyDigest(fairnessKey: string): string {
  return createHash("sha256").update(fairnessKey, "utf8").digest("hex").slice(0, 16);
}

/** The index entry of a job with these stored fields; undefined when it needs none (every field its default). */
export function scheduleEntryFor(schedule: StoredSchedule): ScheduleEntry | undefined {
  const { priority, fairnessKey, notBeforeAtMs } = schedule;
  const entry: ScheduleEntry = {
    ...(priority !== undefined && priority !== DEFAULT_PRIORITY ? { priority } : {}),
    ...(fairnessKey !== undefined ? { fairnessKeyDigest: fairnessKeyDigest(fairnessKey) } : {}),
    ...(notBeforeAtMs !== undefined ? { notBeforeAtMs } : {}),
  };
  return Object.keys(entry).length === 0 ? undefined : entry;
}

/** How the step schedules one active job: its priority, the fairness key it shares (or its own), when it may start. */
export interface JobSchedule {
  id: string;
  priority: number;
  /** The fairness key's digest, or `job:<id>` for a job without one (its own key). */
  fairness: string;
  /** Wall-clock ms before which it is not dispatched; 0 for a job that may start at once. */
  notBeforeAtMs: number;
}

/** The schedule of an active job from its index entry (lenient: an entry it cannot read counts as none). */
export function scheduleOf(id: string, entry: unknown): JobSchedule {
  const parsed = entry === undefined ? undefined : scheduleEntrySchema.safeParse(entry);
  const value = parsed?.success === true ? parsed.data : {};
  return {
    id,
    priority: value.priority ?? DEFAULT_PRIORITY,
    fairness: value.fairnessKeyDigest ?? `job:${id}`,
    notBeforeAtMs: value.notBeforeAtMs ?? 0,
  };
}
