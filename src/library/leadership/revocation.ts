import type { Revocation } from "../lease/LeaseStore";
import { withTimeout } from "../util/timeout";
import type { ResolvedElectorOptions } from "./options";
import type { Term } from "./Term";

/**
 * Whether a step-down request binds this term: it names the term's own epoch, or the epoch of the term it directly
 * followed and no leader has honoured it yet. The second case closes the race in which an operator read the record
 * between a new holder's acquire and its record write: the request names the previous epoch, whose leader is gone,
 * so its successor steps down instead (and "accepted" still means "someone steps down").
 */
export function bindsTerm(revocation: Revocation | undefined, term: Term): boolean {
  if (revocation === undefined || !term.hasBegun) return false;
  if (revocation.epoch === term.epoch) return true;
  return !revocation.honoured && term.previousEpoch > 0 && revocation.epoch === term.previousEpoch;
}

/**
 * Reads the latest step-down request and, when it binds the term, ends the term with reason "revoked" and marks the
 * request honoured — before the caller releases the lease, so the next term is not stopped by it too. A failed read
 * is logged, not fatal: the next renewal checks again.
 */
export async function checkRevocation(
  term: Term,
  options: ResolvedElectorOptions,
  abortSignal: AbortSignal,
): Promise<void> {
  const { store, logger, requestTimeoutMs, instanceId } = options;
  const { epoch } = term;
  let revocation: Revocation | undefined;
  try {
    const budgetMs = Math.min(requestTimeoutMs, term.msToDeadline());
    revocation = await withTimeout(budgetMs, (signal) => store.readRevocation({ abortSignal: signal }), {
      abortSignal,
    });
  } catch (error) {
    if (abortSignal.aborted) return;
    logger.warn(
      `Leader ${instanceId} could not check for a step-down request: ${error instanceof Error ? error.message : String(error)}`,
      { instanceId, epoch },
    );
    return;
  }
  if (revocation === undefined || !bindsTerm(revocation, term)) return;
  const whose =
    revocation.epoch === epoch
      ? "this leader"
      : `the leader of epoch ${revocation.epoch}, which ended before it could, so its successor steps down instead`;
  term.end("revoked", `an operator asked ${whose} to step down`);
  try {
    // The term's signal has fired; this write has its own time limit, and the release waits for it.
    await withTimeout(requestTimeoutMs, (signal) => store.honourRevocation(revocation.epoch, { abortSignal: signal }));
  } catch (error) {
    logger.warn(
      `Leader ${instanceId} stepped down but could not mark the request honoured; the next leader may step down too: ${error instanceof Error ? error.message : String(error)}`,
      { instanceId, epoch },
    );
  }
}
