import { z } from "zod";
import { StaleEpochError } from "../../library/errors.js";
import { FencedStateStore } from "../../library/fencing/FencedStateStore.js";
import type { StateStore } from "../../library/fencing/StateStore.js";
import type { LeaderElectorOptions } from "../../library/leadership/options.js";
import type { LeadershipTerm } from "../../library/leadership/Term.js";
import type { Logger } from "../../library/util/logger.js";
import type { Abortable } from "../../library/util/delay.js";

/** State key of the term history. Every term writes it before any other document. */
export const TERMS_KEY = "terms.json";

/** How many terms the history keeps (newest last). */
export const TERM_HISTORY_LIMIT = 20;

/** One leadership term, as the history records it. */
export const termEntrySchema = z.looseObject({
  holder: z.string(),
  epoch: z.number().int().min(1),
  /** Wall-clock ms when the term began. */
  sinceMs: z.number(),
  /** Wall-clock ms when the term's last step ended (the term gives the lease back right after, or lapses). */
  endedAtMs: z.number().optional(),
  /** How the term ended, as the next term found the lease: given back, or lapsed (expired, broken, taken over). */
  end: z.enum(["released", "lapsed"]).optional(),
});
export type TermEntry = z.infer<typeof termEntrySchema>;

/** The bounded history of the latest terms. */
export const termHistorySchema = z.looseObject({
  v: z.literal(1),
  terms: z.array(termEntrySchema).max(TERM_HISTORY_LIMIT),
});
export type TermHistory = z.infer<typeof termHistorySchema>;

/**
 * Records `term` in the history, fenced by its epoch. The step calls it before writing anything else, so the
 * history's stored epoch is at least every epoch stored in any document: the floor for the next term's epoch (see
 * {@link readEpochFloor}) even when the lease blob, and the epoch counter in its metadata, was lost. A history that is
 * not in this shape (written by something else) is started afresh rather than blocking every term.
 *
 * @throws StaleEpochError when a newer term has written the history, or another term with this epoch recorded itself
 *   first (this term must stop).
 */
export async function recordTerm(
  fenced: FencedStateStore,
  term: Pick<LeadershipTerm, "instanceId" | "epoch" | "startedAtMs">,
  logger: Logger,
  options: Abortable = {},
): Promise<void> {
  const entry: TermEntry = { holder: term.instanceId, epoch: term.epoch, sinceMs: term.startedAtMs };
  await fenced.update(
    TERMS_KEY,
    (value) => {
      const parsed = termHistorySchema.safeParse(value);
      if (parsed.success) return parsed.data;
      logger.warn(
        `${TERMS_KEY} is not a term history (${parsed.error.issues[0]?.message ?? "invalid"}); starting it afresh.`,
        { instanceId: term.instanceId, epoch: term.epoch },
      );
      return undefined;
    },
    (current) => {
      const terms = current?.terms ?? [];
      const last = terms.at(-1);
      if (last?.epoch === term.epoch) {
        // this term is recorded already
        if (last.holder === entry.holder && last.sinceMs === entry.sinceMs) return undefined;
        // Another term has this epoch: the lease blob (and its epoch counter) was lost after one of the two read the
        // floor. Only the first to record itself goes on; this one stops before any other write, and the next term
        // reads this epoch as the floor. (Found by the simulator, seed 1040.)
        throw new StaleEpochError(
          term.epoch,
          last.epoch,
          `${TERMS_KEY}: epoch ${term.epoch} is already recorded by another term (${last.holder}, since ${new Date(last.sinceMs).toISOString()}); this term (${entry.holder}) must stop.`,
        );
      }
      return { ...current, v: 1 as const, terms: [...terms, entry].slice(-TERM_HISTORY_LIMIT) };
    },
    options,
  );
}

/**
 * Records, as a step of `term` ends, when it ended, and how the term before it ended (`term.previousEnd`, known only
 * now), so the status page shows how long each term lasted and how it ended. One fenced write (a read and a
 * conditional write) per step; nothing when the history does not hold the term (started afresh since).
 */
export async function recordTermEnd(
  fenced: FencedStateStore,
  term: Pick<LeadershipTerm, "epoch" | "previousEnd">,
  endedAtMs: number,
  options: Abortable = {},
): Promise<void> {
  await fenced.update(
    TERMS_KEY,
    (value) => {
      const parsed = termHistorySchema.safeParse(value);
      return parsed.success ? parsed.data : undefined;
    },
    (current) => {
      const terms = [...(current?.terms ?? [])];
      const at = terms.findIndex((entry) => entry.epoch === term.epoch);
      const entry = terms[at];
      if (current === undefined || entry === undefined) return undefined;
      terms[at] = { ...entry, endedAtMs };
      const before = terms[at - 1];
      if (before !== undefined && before.end === undefined) terms[at - 1] = { ...before, end: term.previousEnd };
      return { ...current, terms };
    },
    options,
  );
}

/** The highest epoch stored in the coordinator's state: the epoch that last wrote the term history (0 when none). */
export async function readEpochFloor(state: StateStore, options: Abortable = {}): Promise<number> {
  return (await state.read(TERMS_KEY, options))?.epoch ?? 0;
}

/**
 * The recorded terms, oldest first (at most {@link TERM_HISTORY_LIMIT}). A plain read, no lease needed: any instance
 * may call it. None when no term has been recorded yet, or when the document is not a term history (the next term
 * starts it afresh).
 */
export async function readTermHistory(state: StateStore, options: Abortable = {}): Promise<TermEntry[]> {
  const parsed = termHistorySchema.safeParse((await state.read(TERMS_KEY, options))?.value);
  return parsed.success ? parsed.data.terms : [];
}

/**
 * The elector options that tie epochs to this history: a new term's epoch is above the history's (so above every
 * stored epoch, even when the lease blob and its epoch counter were lost), and a term records itself here before it
 * begins, so no two terms share an epoch. A history it must start afresh is reported to the attempt's logger.
 */
export function epochOptions(state: StateStore): Pick<LeaderElectorOptions, "readEpochFloor" | "claimEpoch"> {
  return {
    readEpochFloor: (options) => readEpochFloor(state, options),
    claimEpoch: (claim, { abortSignal, logger }) =>
      recordTerm(new FencedStateStore(state, claim), claim, logger, { abortSignal }),
  };
}
