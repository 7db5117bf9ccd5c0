import type { CoordinationDeps } from "../deps.js";
import { withoutHeld } from "../state/heldItems.js";
import type { JobState } from "../state/jobState.js";
import { jsonByteLength } from "../state/jsonSize.js";

/** A running job that cannot go on as a whole, ended by the fold (`foldOutcomes.ts`). */

/**
 * The job, ended as failed with `reason`: its counts and aggregate stay as they were, its held items let go (they count
 * as skipped).
 */
export function endJob(deps: Pick<CoordinationDeps, "now">, state: JobState, reason: string): JobState {
  return { ...withoutHeld(state), status: "failed", failureReason: reason, completedAtMs: deps.now() };
}

/**
 * The job, ended as failed because its document would pass MAX_JOB_DOCUMENT_BYTES: as {@link endJob}, so the write
 * that ends it is no larger than the document already stored. Should that one be past the bound itself (written by a
 * version without it, or before the bound was lowered), its aggregate is dropped (null) and the reason says so: the
 * job must be able to end.
 */
export function endTooLarge(
  deps: Pick<CoordinationDeps, "now" | "maxJobDocumentBytes">,
  state: JobState,
  reason: string,
): JobState {
  const ended = endJob(deps, state, reason);
  if (jsonByteLength(ended, deps.maxJobDocumentBytes) <= deps.maxJobDocumentBytes) return ended;
  return {
    ...ended,
    aggregate: null,
    failureReason: `${reason}; its aggregate was dropped: it was past the bound already`,
  };
}
