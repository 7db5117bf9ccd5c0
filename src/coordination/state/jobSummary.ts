import { z } from "zod";
import { MAX_SUMMARY_BYTES, type StateStore } from "../../library/fencing/StateStore.js";
import type { Abortable } from "../../library/util/delay.js";
import { heldCount } from "./heldItems.js";
import { jobStateSchema, keys, type JobState } from "./jobState.js";

/**
 * A job's summary: what the status page shows of a job — status, counts, times, why it failed, its most frequent
 * failure reasons — in at most MAX_SUMMARY_BYTES of JSON. Every job write stores it beside the document, in the same
 * write (`JobStore.writeJob`), so it is fenced like the job and never disagrees with it; a reader gets it without the
 * document (one small request), whose bitmaps and aggregate may be megabytes.
 */

/** Most failure reasons a summary keeps, most frequent first (the status page shows as many). */
export const SUMMARY_REASONS = 5;
/** Longest reason a summary keeps, in characters (a longer one is cut, with "…"). */
const SUMMARY_REASON_LENGTH = 200;
/** Longest `failureReason` a summary keeps, in characters. */
const SUMMARY_FAILURE_REASON_LENGTH = 600;

/** A count of failed items with one reason. */
export const reasonCountSchema = z.looseObject({ reason: z.string(), count: z.number().int().min(1) });
export type ReasonCount = z.infer<typeof reasonCountSchema>;

/** The summary of a job, as stored. A summary of another version (`v`) is not read: the reader falls back. */
export const jobSummarySchema = z.looseObject({
  v: z.literal(1),
  kind: z.string(),
  status: jobStateSchema.shape.status,
  failureReason: z.string().optional(),
  itemCount: z.number().int().min(0),
  dispatched: z.number().int().min(0),
  doneCount: z.number().int().min(0),
  failedCount: z.number().int().min(0),
  skippedCount: z.number().int().min(0).optional(),
  /** Items held (`heldItems.ts`); absent when none. */
  heldCount: z.number().int().min(1).optional(),
  createdAtMs: z.number(),
  completedAtMs: z.number().optional(),
  endedAtMs: z.number().optional(),
  lastEpoch: z.number().int().min(0),
  /** The most frequent recorded failure reasons, most frequent first. */
  reasons: z.array(reasonCountSchema),
  /** Failures recorded with their reason (the job keeps at most MAX_RECORDED_FAILURES). */
  recordedFailures: z.number().int().min(0),
});
export type JobSummary = z.infer<typeof jobSummarySchema>;

/** Counts equal reasons, most frequent first (ties by first seen), at most `max`. */
export function countReasons(reasons: readonly string[], max = SUMMARY_REASONS): ReasonCount[] {
  const counts = new Map<string, number>();
  for (const reason of reasons) counts.set(reason, (counts.get(reason) ?? 0) + 1);
  return [...counts]
    .map(([reason, count]) => ({ reason, count }))
    .sort((a, b) => b.count - a.count)
    .slice(0, max);
}

/** A job's summary as JSON of at most MAX_SUMMARY_BYTES (reasons are cut, then dropped, to fit). */
export function summarizeJob(state: JobState): string {
  const cut = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);
  const held = heldCount(state);
  const summary: JobSummary = {
    v: 1,
    kind: state.kind,
    status: state.status,
    ...(state.failureReason === undefined
      ? {}
      : { failureReason: cut(state.failureReason, SUMMARY_FAILURE_REASON_LENGTH) }),
    itemCount: state.itemCount,
    dispatched: state.dispatched,
    doneCount: state.doneCount,
    failedCount: state.failedCount,
    ...(state.skippedCount === undefined ? {} : { skippedCount: state.skippedCount }),
    ...(held > 0 ? { heldCount: held } : {}),
    createdAtMs: state.createdAtMs,
    ...(state.completedAtMs === undefined ? {} : { completedAtMs: state.completedAtMs }),
    ...(state.endedAtMs === undefined ? {} : { endedAtMs: state.endedAtMs }),
    lastEpoch: state.lastEpoch,
    reasons: countReasons(state.failures.map((failure) => failure.reason)).map(({ reason, count }) => ({
      reason: cut(reason, SUMMARY_REASON_LENGTH),
      count,
    })),
    recordedFailures: state.failures.length,
  };
  let json = JSON.stringify(summary);
  // Reasons of many multi-byte characters may not fit: the least frequent go first, then the job's own reason is cut.
  while (Buffer.byteLength(json) > MAX_SUMMARY_BYTES && summary.reasons.length > 0) {
    summary.reasons.pop();
    json = JSON.stringify(summary);
  }
  if (Buffer.byteLength(json) > MAX_SUMMARY_BYTES && summary.failureReason !== undefined) {
    summary.failureReason = cut(summary.failureReason, 200);
    json = JSON.stringify(summary);
  }
  return json;
}

/** What a reader found of a job's summary. */
export type SummaryRead =
  | { ok: true; summary: JobSummary }
  /** The document has no summary this version reads (an earlier version wrote it): `bytes` is its size. */
  | { ok: false; bytes: number };

/** Reads a job's summary without its document; undefined when the job has no state (yet, or any more). */
export async function readJobSummary(
  state: StateStore,
  id: string,
  options: Abortable = {},
): Promise<SummaryRead | undefined> {
  const stored = await state.readSummary(keys.jobState(id), options);
  if (stored === undefined) return undefined;
  let json: unknown;
  try {
    json = stored.summary === undefined ? undefined : JSON.parse(stored.summary);
  } catch {
    json = undefined; // not one this version wrote: read as missing
  }
  const parsed = jobSummarySchema.safeParse(json);
  return parsed.success ? { ok: true, summary: parsed.data } : { ok: false, bytes: stored.bytes };
}
