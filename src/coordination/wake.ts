import { z } from "zod";
import type { MessageQueue, PortOptions } from "./ports";

/**
 * Wake-ups: small messages on the control queue (WAKE_QUEUE) that ask for a coordination step now instead of at the
 * next timer tick. Whoever has news for the leader sends one — a submission today; queue activity later — and the
 * `wake` function makes ONE leadership attempt for it, exactly as a tick does. A wake-up carries no work and no
 * authority: losing one costs latency (the timer is the heartbeat), duplicating one costs one lease attempt.
 */

/** Why a wake-up was sent: lowercase words joined by '-', e.g. "job-submitted". Informational (events, logs). */
const wakeReason = z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, "must be 1–63 lowercase letters, digits or '-', starting with a letter");

/** A wake-up message. */
export const wakeMessageSchema = z.strictObject({
  v: z.literal(1),
  reason: wakeReason,
  /** The job it is about, when there is one. */
  jobId: z.string().max(63).optional(),
  /** Wall-clock ms when it was sent (for the wake-up's delay in events). */
  sentAtMs: z.number().int().min(0),
  /** Instance id (or tool) that sent it. */
  from: z.string().max(200),
});
export type WakeMessage = z.infer<typeof wakeMessageSchema>;

/** What a sender says about a wake-up. */
export interface WakeUp {
  reason: string;
  jobId?: string;
  from: string;
}

/** Sends one wake-up to the control queue. @throws the queue's error (callers decide whether that matters). */
export async function sendWakeUp(queue: MessageQueue, wake: WakeUp, options: PortOptions & { now?: () => number } = {}): Promise<void> {
  const message: WakeMessage = wakeMessageSchema.parse({ v: 1, ...wake, sentAtMs: (options.now ?? Date.now)() });
  await queue.send([JSON.stringify(message)], options);
}
