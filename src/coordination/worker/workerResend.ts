import type { CoordinationDeps } from "../deps.js";
import { withTimeout } from "../../library/util/timeout.js";

/**
 * Longest the worker waits for the work queue to take a unit it sends again during a shutdown, in ms: the host gives a
 * shutting-down process a few seconds, and a send is one small request.
 */
export const RESEND_TIMEOUT_MS = 5000;

/**
 * A shutdown on a unit's last delivery (issue 37, hole 4): the host would move the message to the poison queue, and the
 * leader fail every item of it with "retries exhausted" — the items this delivery had already processed too. Instead
 * the unit goes on the work queue again, whole and unchanged, with a fresh delivery count, and the delivery reports
 * nothing: the copy's result counts every item (its done ones are processed again, as on any redelivery; a kind names
 * its outputs after the idempotency key). Reporting the done items now instead would split the unit, and a leader
 * after a lapsed term finds the units in flight from runs of items with neither bit set (`redispatch.ts`). The copy is
 * sent without the aborted shutdown signal, within {@link RESEND_TIMEOUT_MS}; if it cannot be sent, the shutdown
 * (`shutdown`, the error the unit's run threw) is thrown as before and the host poisons the message. One send request
 * per such shutdown; only a shutdown sends it, so a unit goes round again at most once a shutdown. Returns the reason,
 * for the work outcome. A payload given as the message's text is sent as it came (not JSON-encoded again). Not for a
 * granted unit (issue 42): its copy would be a new message, which cannot claim the grant this delivery claimed; it goes
 * back to the leader instead (`sendRegrant`).
 */
export async function resendOnShutdown(
  deps: Pick<CoordinationDeps, "workQueue" | "workPoisonQueue" | "logger" | "instanceId">,
  payload: unknown,
  delivery: { id: string; dequeueCount: number; maxDequeueCount: number },
  unit: { jobId: string; item: number; count: number },
  shutdown: unknown,
): Promise<string> {
  const where = `work message ${delivery.id} (job ${unit.jobId}, items ${unit.item}–${unit.item + unit.count - 1})`;
  try {
    await withTimeout(RESEND_TIMEOUT_MS, (abortSignal) =>
      deps.workQueue.send([typeof payload === "string" ? payload : JSON.stringify(payload)], { abortSignal }),
    );
  } catch (error) {
    deps.logger.warn(
      `The host shut down during the last delivery of ${where}, and sending the unit again failed; it goes to ${deps.workPoisonQueue.name}: ${error instanceof Error ? error.message : String(error)}`,
      { instanceId: deps.instanceId },
    );
    throw shutdown;
  }
  const reason = `the host shut down during its last delivery (${delivery.dequeueCount} of ${delivery.maxDequeueCount}): sent again, whole, to ${deps.workQueue.name}`;
  deps.logger.info(`${where}: ${reason}.`, { instanceId: deps.instanceId });
  return reason;
}
