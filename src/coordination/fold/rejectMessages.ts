import type { CoordinationDeps } from "../deps.js";
import type { Source } from "./foldEntries.js";
import type { ReceivedMessage } from "../ports/ports.js";
import { rejectionReason, rejectionText } from "../ports/rejection.js";
import {
  AbortError,
  ConcurrentUpdateError,
  LeadershipLostError,
  StaleEpochError,
  StorageError,
} from "../../library/errors.js";
import type { Abortable } from "../../library/util/delay.js";

/**
 * Whether an error on a message may be the message's doing: not the leader's own end (the step aborted, the term lost
 * or fenced), not a race with another writer, and not storage that did not answer, answered 5xx, or refused the app
 * (401, 403) or its pace (408, 429).
 */
export function blamesTheMessage(error: unknown, options: Abortable): boolean {
  if (endsTheStep(error, options)) return false;
  if (error instanceof StorageError) return refusedForTheRequest(error);
  return !(error instanceof ConcurrentUpdateError);
}

/** Whether an error is the leader's own end — the step aborted, the term lost or fenced —, which ends the step. */
export function endsTheStep(error: unknown, options: Abortable): boolean {
  return (
    options.abortSignal?.aborted === true ||
    error instanceof AbortError ||
    error instanceof LeadershipLostError ||
    error instanceof StaleEpochError
  );
}

/**
 * Whether storage refused a request for what it asked (a 4xx answer), not for who asked or when: not 401 or 403 (the
 * app's identity or its permissions), 408 or 429 (a timeout, throttling). Retrying a refused request cannot help.
 */
export function refusedForTheRequest(error: unknown): error is StorageError {
  const status = error instanceof StorageError ? error.statusCode : undefined;
  return status !== undefined && status >= 400 && status < 500 && ![401, 403, 408, 429].includes(status);
}

/**
 * Moves a message the leader cannot use to the source's poison queue with the reason, logs it, and deletes the
 * original. The leader's rejection names the queue it came from, so the poison fold never claims it again; it always
 * fits a queue message ({@link rejectionText}), or the step would fail on it every time it came back.
 */
export async function reject(
  deps: CoordinationDeps,
  source: Source,
  message: ReceivedMessage,
  why: string,
  epoch: number,
  options: Abortable,
): Promise<void> {
  const reason = rejectionReason(why);
  deps.logger.warn(`Rejected message ${message.id} from ${source.queue.name}: ${reason}`, {
    instanceId: deps.instanceId,
    epoch,
  });
  deps.emit({
    type: "message-rejected",
    instanceId: deps.instanceId,
    atMs: deps.now(),
    epoch,
    queue: source.queue.name,
    messageId: message.id,
    reason,
  });
  const header = { by: "leader" as const, reason, queue: source.queue.name, messageId: message.id, atMs: deps.now() };
  await source.poison.send([rejectionText(header, message.rawText)], options);
  source.rejected.add(message.id);
  await source.queue.delete(message, options);
}
