import { z } from "zod";

/**
 * The line protocol between the lease benchmark (scripts/verification/bench/lease.ts) and its contender processes
 * (scripts/verification/bench/lease/contender.ts): the contender prints one JSON object per line on stdout, and reads
 * commands, one per line, on stdin. Every `t` is `Date.now()` in the contender; all processes run on one machine, so
 * they compare.
 */

/**
 * The implementations under test: this library at its defaults (takeover off), this library with takeover (the app's
 * defaults: heartbeat 1 s, takeover deadline 2.5 s), and the pattern's C# sample.
 */
export const IMPLEMENTATIONS = ["project", "takeover", "baseline"] as const;
export type Implementation = (typeof IMPLEMENTATIONS)[number];

/** The blob both implementations lease (each implementation and scenario has its own container). */
export const LEASE_BLOB_NAME = "MyLeaderCoordinatorTask";

/**
 * Command: shut down gracefully — end the current term through the implementation's own cancellation path (which
 * releases the lease), report `released`, and exit. The contender does not contend again: both implementations try
 * to acquire again at once after a term, so a leader that stayed would win its own lease back within milliseconds and
 * no handover would be measured.
 */
export const RELEASE_COMMAND = "release";

const base = { id: z.string().min(1), t: z.number() };

/** A line a contender prints. */
export const contenderMessageSchema = z.discriminatedUnion("type", [
  /** Started: clients built, about to make its first attempt. */
  z.object({ type: z.literal("ready"), ...base }),
  /** Began a term: the lease is held and the leader's task is running. */
  z.object({ type: z.literal("acquired"), ...base }),
  /** After a release command: the term ended and the lease release completed (storage answered). */
  z.object({ type: z.literal("released"), ...base }),
  /** After a release command when it was not leading: stopped without a term to end. */
  z.object({ type: z.literal("stopped"), ...base }),
  /** A term ended for another reason than the release command (lease lost, renew deadline, …). */
  z.object({ type: z.literal("lost"), ...base, detail: z.string() }),
  /** The contender failed and is exiting. */
  z.object({ type: z.literal("error"), ...base, message: z.string() }),
]);
export type ContenderMessage = z.infer<typeof contenderMessageSchema>;
export type ContenderMessageType = ContenderMessage["type"];

/** Parses one stdout line; undefined when it is not a protocol message (e.g. a stray library print). */
export function parseContenderMessage(line: string): ContenderMessage | undefined {
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch {
    return undefined;
  }
  const parsed = contenderMessageSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}
