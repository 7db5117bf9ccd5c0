import { z } from "zod";
import type { MessageQueue, SendOptions } from "../ports/ports.js";
import type { Abortable } from "../../library/util/delay.js";

/**
 * Wake-ups: small messages on the control queue (WAKE_QUEUE) that ask for a coordination step now instead of at the
 * next timer tick. Whoever has news for the leader sends one — a submission, a worker that sent a result or poison
 * ({@link ActivityWakeUps}) — and the `wake` function makes ONE leadership attempt for it, exactly as a tick does. A
 * wake-up carries no work and no authority: losing one costs latency (the timer is the heartbeat), duplicating one
 * costs one lease attempt.
 */

/** Highest link number a follow-up may carry (the chain's real length is {@link ActivityWakeUps}'s `maxFollowUps`). */
export const FOLLOW_UP_LIMIT = 1000;

/** Why a wake-up was sent: lowercase words joined by '-', e.g. "job-submitted". Informational (events, logs). */
const wakeReason = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,62}$/, "must be 1–63 lowercase letters, digits or '-', starting with a letter");

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
  /** Set on a follow-up: its place in the chain, from 1. */
  followUp: z.number().int().min(1).max(FOLLOW_UP_LIMIT).optional(),
});
export type WakeMessage = z.infer<typeof wakeMessageSchema>;

/** What a sender says about a wake-up. */
export interface WakeUp {
  reason: string;
  jobId?: string;
  from: string;
  followUp?: number;
}

/** Sends one wake-up to the control queue. @throws the queue's error (callers decide whether that matters). */
export async function sendWakeUp(
  queue: MessageQueue,
  wake: WakeUp,
  options: SendOptions & { now?: () => number } = {},
): Promise<void> {
  await queue.send([wakeMessageText(wake, options.now)], options);
}

/** A wake-up message's body, stamped with the time now. @throws ZodError when `wake` is not a valid wake-up. */
export function wakeMessageText(wake: WakeUp, now: () => number = Date.now): string {
  const message: WakeMessage = wakeMessageSchema.parse({ v: 1, ...wake, sentAtMs: now() });
  return JSON.stringify(message);
}

/** What an {@link ActivityWakeUps} call did. */
export type ActivitySend = "sent" | "throttled" | "off" | "chain-ended";

/**
 * Wake-ups from queue activity, one instance per process. A worker that has just sent a result or a poison message
 * calls {@link ActivityWakeUps.activity}: the leader has something to fold, and if no step is running (the last one
 * spent its budget, or the leader died) nobody would fold it before the next timer tick. A wake-up that found the
 * lease held, or this process already busy with an attempt or a step, calls {@link ActivityWakeUps.followUp}: that
 * holder may be dead (killed mid-step: its lease runs out up to a lease duration later, and its own wake-ups died
 * with it), so one more wake-up, invisible for one interval, looks again — a chain of them, each sent only while the
 * lease is still held or busy, for `maxFollowUps` links (the app uses three lease durations of cover). The step that
 * finally acquires ends the chain.
 *
 * Each kind is sent at most once per `intervalMs` per process, so a busy queue costs at most two wake-up messages —
 * and two leadership attempts, each ONE lease read when the lease is held — per process per interval, whatever the
 * number of results, and nothing once the chains have ended. 0 turns both off.
 */
export class ActivityWakeUps {
  private lastActivityMs = Number.NEGATIVE_INFINITY;
  private lastFollowUpMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly queue: MessageQueue,
    private readonly options: { intervalMs: number; maxFollowUps: number; from: string; now?: () => number },
  ) {}

  /** After a result or poison message was sent. @throws the queue's error (the throttle then lets the next one try). */
  activity(
    reason: "results-arrived" | "poison-arrived",
    jobId: string | undefined,
    options: Abortable = {},
  ): Promise<ActivitySend> {
    return this.throttled("lastActivityMs", { reason, jobId, from: this.options.from }, options);
  }

  /**
   * After `wake` found the lease held or this process busy: the next link of its chain, one interval later. @throws the
   * queue's error.
   */
  followUp(wake: Pick<WakeMessage, "reason" | "jobId" | "followUp">, options: Abortable = {}): Promise<ActivitySend> {
    const next = (wake.followUp ?? 0) + 1;
    if (this.options.intervalMs === 0) return Promise.resolve("off");
    if (next > Math.min(this.options.maxFollowUps, FOLLOW_UP_LIMIT)) return Promise.resolve("chain-ended");
    const visibilityDelayS = Math.ceil(this.options.intervalMs / 1000);
    return this.throttled(
      "lastFollowUpMs",
      { reason: wake.reason, jobId: wake.jobId, from: this.options.from, followUp: next },
      { ...options, visibilityDelayS },
    );
  }

  private async throttled(
    slot: "lastActivityMs" | "lastFollowUpMs",
    wake: WakeUp,
    options: SendOptions,
  ): Promise<ActivitySend> {
    const { intervalMs } = this.options;
    if (intervalMs === 0) return "off";
    const now = this.options.now ?? Date.now;
    const previous = this[slot];
    if (now() - previous < intervalMs) return "throttled";
    this[slot] = now(); // before sending: concurrent invocations of this process must not all send
    try {
      await sendWakeUp(this.queue, wake, { ...options, now });
    } catch (error) {
      this[slot] = previous;
      throw error;
    }
    return "sent";
  }
}
