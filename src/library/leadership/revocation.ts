import type { Revocation } from "../lease/LeaseStore.js";
import { withTimeout } from "../util/timeout.js";
import type { ResolvedElectorOptions } from "./options.js";
import type { Term } from "./Term.js";

/**
 * Whether a step-down request binds this term: it names the term's own epoch, or it names an earlier epoch and no term
 * has honoured it yet. An operator's request reads the epoch of the lease's record and then writes the request; by the
 * time that write lands the leader it read may have ended, and whole short terms after it (an idle wake-up step) may
 * have begun, checked and ended. So a request that nobody has honoured binds whichever term reads it next with an
 * epoch of at least the one it names — the leader it named if that one still leads, else the next term to begin — and
 * every term reads it right after writing its record and once per renew interval. "Accepted" (HTTP 202) therefore
 * always means that someone steps down after the request landed; the term that does marks it honoured, so later terms
 * are not affected.
 */
export function bindsTerm(revocation: Revocation | undefined, term: Term): boolean {
  if (revocation === undefined || !term.hasBegun) return false;
  if (revocation.epoch === term.epoch) return true;
  return !revocation.honoured && revocation.epoch < term.epoch;
}

/**
 * Reads the latest step-down request and, when it binds the term, ends the term with reason "revoked" and marks that
 * request (by its id) honoured — before the caller releases the lease, so the next term is not stopped by it too. A
 * failed read is logged, not fatal: the next renewal checks again.
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
      : `the leader of epoch ${revocation.epoch}, which ended before the request landed, so the next term steps down instead`;
  term.end("revoked", `an operator asked ${whose} to step down`);
  try {
    // The term's signal has fired; this write has its own time limit, and the release waits for it.
    const { requestId } = revocation;
    await withTimeout(requestTimeoutMs, (signal) =>
      store.honourRevocation(revocation.epoch, {
        abortSignal: signal,
        ...(requestId === undefined ? {} : { requestId }),
      }),
    );
  } catch (error) {
    logger.warn(
      `Leader ${instanceId} stepped down but could not mark the request honoured; the next leader may step down too: ${error instanceof Error ? error.message : String(error)}`,
      { instanceId, epoch },
    );
  }
}
