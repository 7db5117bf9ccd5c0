import type { z } from "zod";
import type { CoordinationDeps } from "../deps.js";
import { keys } from "../state/jobState.js";
import {
  MAX_OUTCOME_BYTES,
  outcomeTooLarge,
  type GrantReport,
  type itemResultMessageSchema,
  type UnitResultMessage,
} from "../ports/messages.js";
import type { Abortable } from "../../library/util/delay.js";

/* How a worker reports what it did: one result message per unit (or item), large outcomes in a blob it names. */

/** What sending a result needs: the system container (outcome blobs) and the results queue. */
type ResultDeps = Pick<CoordinationDeps, "system" | "resultsQueue">;

/** Results larger than this go to a blob; the result message names it (queue messages hold 64 KiB base64). */
const MAX_INLINE_RESULT_BYTES = 40 * 1024;

/**
 * Sends a v1 item's result; a partial too large for a queue message goes to a blob that it names, and one larger than
 * {@link MAX_OUTCOME_BYTES} (which the leader would not read) is reported as the item's failure instead: returns its
 * reason then.
 */
export async function sendItemResult(
  deps: ResultDeps,
  result: z.input<typeof itemResultMessageSchema>,
  options: Abortable,
): Promise<string | undefined> {
  let text = JSON.stringify(result);
  if (result.ok && Buffer.byteLength(text) > MAX_INLINE_RESULT_BYTES) {
    const partial = JSON.stringify(result.partial);
    const bytes = Buffer.byteLength(partial);
    if (bytes > MAX_OUTCOME_BYTES) {
      const reason = outcomeTooLarge(bytes);
      await sendItemResult(deps, { v: 1, jobId: result.jobId, item: result.item, ok: false, reason }, options);
      return reason;
    }
    const blob = keys.partial(result.jobId, result.item);
    await deps.system.writeText(blob, partial, options);
    text = JSON.stringify({ v: 1, jobId: result.jobId, item: result.item, ok: true, partialBlob: blob });
  }
  await deps.resultsQueue.send([text], options);
  return undefined;
}

/**
 * Sends a unit's result; one too large for a queue message goes to a blob (`keys.outcome`) that it names. An outcome
 * larger than {@link MAX_OUTCOME_BYTES}, which the leader would not read, is not written: the unit's done items are
 * reported failed with the reason instead, which is returned. A granted unit's result (`grant` given) is a v3 result
 * carrying its grant's report, in the message itself however large its outcome.
 */
export async function sendUnitResult(
  deps: ResultDeps,
  result: UnitResultMessage,
  options: Abortable,
  grant?: GrantReport,
): Promise<string | undefined> {
  const versioned = (message: UnitResultMessage): string =>
    JSON.stringify(grant === undefined ? message : { ...message, v: 3, grant });
  let text = versioned(result);
  if (Buffer.byteLength(text) > MAX_INLINE_RESULT_BYTES) {
    const blob = keys.outcome(result.jobId, result.first);
    const { done = [], partial, failed = [] } = result;
    const outcome = JSON.stringify({ done, partial, failed });
    const bytes = Buffer.byteLength(outcome);
    if (bytes > MAX_OUTCOME_BYTES) {
      const reason = outcomeTooLarge(bytes);
      const { v, jobId, first, count } = result;
      // Its done items carry the partial: without it, the result is small (at most 1,000 failed ranges and reasons).
      await sendUnitResult(
        deps,
        { v, jobId, first, count, failed: [...failed, { items: done, reason }] },
        options,
        grant,
      );
      return reason;
    }
    await deps.system.writeText(blob, outcome, options);
    text = versioned({ v: 2, jobId: result.jobId, first: result.first, count: result.count, outcomeBlob: blob });
  }
  await deps.resultsQueue.send([text], options);
  return undefined;
}
