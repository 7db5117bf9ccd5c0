import { z } from "zod";
import type { FieldError } from "../state/jobStatus.js";
import {
  DEFAULT_PRIORITY,
  MAX_FAIRNESS_KEY_BYTES,
  MAX_FAIRNESS_KEY_LENGTH,
  MAX_PRIORITY,
  MIN_PRIORITY,
  storedScheduleOf,
  type StoredSchedule,
} from "../state/jobSchedule.js";

/**
 * The scheduling fields of a submission (docs/how-to/limit.md) — `priority`, `fairnessKey`, `notBefore` — as users
 * send them, each check saying what is allowed; and the checks across fields (`notBefore` against now and the
 * deadline). `idempotencyKey` is `idempotency.ts`'s.
 */

/** Furthest `notBefore` may lie ahead: 7 days, in seconds (as a deadline). */
export const MAX_NOT_BEFORE_S = 7 * 24 * 3600;

const PRIORITY_MESSAGE = `must be a whole number from ${MIN_PRIORITY} (most urgent) to ${MAX_PRIORITY} (least); ${DEFAULT_PRIORITY} when not given`;
const FAIRNESS_KEY_MESSAGE = `must be a string of 1 to ${MAX_FAIRNESS_KEY_LENGTH} characters (at most ${MAX_FAIRNESS_KEY_BYTES} bytes as UTF-8, no control characters): the tenant the job shares the dispatch window fairly with`;
const NOT_BEFORE_MESSAGE =
  "must be an ISO 8601 time with a time zone, e.g. 2026-05-01T12:00:00Z: no item of the job is dispatched before then";

/** Whether a text has a control character (C0, DEL, C1): a key shows on the status page and in logs. */
function hasControlCharacter(text: string): boolean {
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}

/** The submission's scheduling fields, for its schema. */
export const scheduleFieldsShape = {
  /** 1 (most urgent) to 9 (least): jobs are dispatched strictly by priority. @default 5 */
  priority: z
    .number({ error: PRIORITY_MESSAGE })
    .int(PRIORITY_MESSAGE)
    .min(MIN_PRIORITY, PRIORITY_MESSAGE)
    .max(MAX_PRIORITY, PRIORITY_MESSAGE)
    .optional(),
  /** The tenant: jobs of equal priority share the dispatch window fairly by this key. @default the job's own */
  fairnessKey: z
    .string({ error: FAIRNESS_KEY_MESSAGE })
    .min(1, FAIRNESS_KEY_MESSAGE)
    .max(MAX_FAIRNESS_KEY_LENGTH, FAIRNESS_KEY_MESSAGE)
    .refine((key) => Buffer.byteLength(key, "utf8") <= MAX_FAIRNESS_KEY_BYTES, FAIRNESS_KEY_MESSAGE)
    .refine((key) => !hasControlCharacter(key), FAIRNESS_KEY_MESSAGE)
    .optional(),
  /** ISO 8601 time with a zone before which none of the job's items is dispatched (the leader's clock). */
  notBefore: z.iso.datetime({ offset: true, error: NOT_BEFORE_MESSAGE }).optional(),
};

/** A submission's scheduling fields, as validated. */
export interface ScheduleFields {
  priority?: number | undefined;
  fairnessKey?: string | undefined;
  notBefore?: string | undefined;
}

/**
 * A well-formed `notBefore` is at most 7 days ahead of `nowMs` and before the job's deadline (`deadlineAtMs`, when it
 * has one). One in the past is allowed: the job may start at once.
 */
export function checkNotBefore(
  notBefore: string | undefined,
  deadlineAtMs: number | undefined,
  nowMs: number,
): FieldError | undefined {
  if (notBefore === undefined) return undefined;
  const atMs = Date.parse(notBefore);
  if (atMs > nowMs + MAX_NOT_BEFORE_S * 1000)
    return { field: "notBefore", message: `must be at most 7 days (${MAX_NOT_BEFORE_S} s) ahead` };
  if (deadlineAtMs !== undefined && atMs >= deadlineAtMs)
    return {
      field: "notBefore",
      message: `must be before the job's deadline (${new Date(deadlineAtMs).toISOString()}): a job cannot start after it has expired`,
    };
  return undefined;
}

/** The stored scheduling fields of a validated submission (the priority only when not the default). */
export function storedSchedule(fields: ScheduleFields & { idempotencyKey?: string | undefined }): StoredSchedule {
  return storedScheduleOf({
    priority: fields.priority,
    fairnessKey: fields.fairnessKey,
    notBeforeAtMs: fields.notBefore === undefined ? undefined : Date.parse(fields.notBefore),
    idempotencyKey: fields.idempotencyKey,
  });
}
