import { keys } from "../coordination/state/jobState.js";
import type { BlobFiles } from "../coordination/ports/ports.js";
import { parseRetryMarker } from "../coordination/jobs/retention.js";
import type { Abortable } from "../library/util/delay.js";

/**
 * The status page's view of retention trouble: ended jobs whose removal failed (a blob storage will not delete: a
 * legal hold, an immutability policy) and is put off (`retention.ts`), read from their retry markers — one listing,
 * and one small read of each shown for why, only while there are any.
 */

/** Most jobs with a failed removal shown; more are counted as "more". */
export const MAX_REMOVAL_FAILURES_SHOWN = 5;

/** An ended job whose removal failed. */
export interface RemovalFailureView {
  id: string;
  /** When the job ended (ISO-8601). */
  endedAt: string;
  /** Failed attempts so far. */
  attempts: number;
  /** When the removal is tried again (ISO-8601). */
  retryAt: string;
  /** Why the last attempt failed, when its marker says. */
  error: string | undefined;
}

/** What the page shows of retention: the jobs whose removal failed, the next due first. */
export interface RetentionView {
  failures: RemovalFailureView[];
  /** True when there are more than {@link MAX_REMOVAL_FAILURES_SHOWN}. */
  more: boolean;
}

/** Reads the jobs whose removal failed. */
export async function readRetentionView(system: BlobFiles, options: Abortable): Promise<RetentionView> {
  const names = await system.list(keys.removalRetryPrefix, MAX_REMOVAL_FAILURES_SHOWN + 1, options);
  const failures = await Promise.all(
    names.slice(0, MAX_REMOVAL_FAILURES_SHOWN).flatMap((name) => {
      const retry = parseRetryMarker(name);
      if (retry === undefined) return [];
      return [
        (async (): Promise<RemovalFailureView> => ({
          id: retry.id,
          endedAt: new Date(retry.endedAtMs).toISOString(),
          attempts: retry.attempts,
          retryAt: new Date(retry.retryAtMs).toISOString(),
          error: errorOf(await system.readText(name, options)),
        }))(),
      ];
    }),
  );
  return { failures, more: names.length > MAX_REMOVAL_FAILURES_SHOWN };
}

/** The error a retry marker's content names, or undefined (gone since the listing, or of another shape). */
function errorOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null && "error" in parsed && typeof parsed.error === "string"
      ? parsed.error
      : undefined;
  } catch {
    return undefined;
  }
}
