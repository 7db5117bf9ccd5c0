import type { z } from "zod";
import type { GrantLoss } from "../flow/grant.js";
import { KIND_WAIT_MS } from "./missingKind.js";
import { asUnit, type ItemOutcome, type UnitOutcome } from "./foldOutcomes.js";
import { keys } from "../state/jobState.js";
import {
  fromRanges,
  parseMessage,
  resultMessageSchema,
  unitOutcomeSchema,
  resultUnitOf,
  newerResultOf,
  RESULT_VERSION,
  type ItemRanges,
  type ItemRef,
  type unitResultMessageSchema,
} from "../ports/messages.js";
import type { OpenedBlob, ReceivedMessage } from "../ports/ports.js";

/**
 * An outcome blob's text (undefined when it does not exist); or why it was not read: it is larger than
 * {@link MAX_OUTCOME_BYTES} (found before reading it, or while), or storage refused the request for what it asked (a
 * 4xx other than 401, 403, 408 and 429: {@link refusedForTheRequest}).
 */
type OutcomeText = { text: string | undefined } | { tooLarge: string } | { refused: string };

/** Reads an outcome blob (system container) for a fold. */
export type OutcomeReader = (name: string) => Promise<OutcomeText>;

/**
 * An opened blob's text, read to its end, or undefined when it has more than `maxBytes` (its size said less: read no
 * further); `bytes`, what was read.
 */
export async function readBounded(opened: OpenedBlob, maxBytes: number): Promise<{ text?: string; bytes: number }> {
  const pieces: Uint8Array[] = [];
  let bytes = 0;
  try {
    for await (const piece of opened.content) {
      bytes += piece.byteLength;
      if (bytes > maxBytes) return { bytes };
      pieces.push(piece);
    }
  } finally {
    opened.close();
  }
  return { text: Buffer.concat(pieces).toString("utf8"), bytes };
}

/**
 * The outcome a result message reports, or why the leader cannot use it — with the unit it names when it names one
 * validly (its job, first item and count), whose items then fail with the reason rather than wait for ever.
 */
export async function resultOf(
  message: ReceivedMessage,
  readOutcome: OutcomeReader,
): Promise<
  | { ok: true; jobId: string; outcome: UnitOutcome }
  | { ok: false; reason: string; unit?: ItemRef }
  | { ok: "newer"; version: number }
  | { ok: "regrant"; jobId: string; unit: ItemRef; grantId: string; how: GrantLoss }
> {
  if (message.text === undefined) return { ok: false, reason: "not valid base64" };
  const newer = newerResultOf(message.text);
  if (newer !== undefined) {
    // A newer worker's (a rolling deploy): left for a newer leader, for as long as results of a missing kind wait.
    if ((message.queuedMs ?? 0) < KIND_WAIT_MS) return { ok: "newer", version: newer.version };
    const reason = `a result of format version ${newer.version}, newer than this leader reads (${RESULT_VERSION}), that no newer leader folded in the hour since it was sent`;
    return { ok: false, reason, ...(newer.unit === undefined ? {} : { unit: newer.unit }) };
  }
  const parsed = parseMessage(resultMessageSchema, message.text);
  if (!parsed.ok) return { ok: false, reason: parsed.reason, unit: resultUnitOf(message.text) };
  const result = parsed.value;
  if (result.v === 3 && result.grant.regrant === true)
    return {
      ok: "regrant",
      jobId: result.jobId,
      unit: { jobId: result.jobId, item: result.first, count: result.count },
      grantId: result.grant.id,
      how: result.grant.expired === true ? "expired" : result.grant.lost === true ? "lost" : "given back",
    };
  if (result.v === 2 || result.v === 3) {
    const outcome = await unitOutcomeOf(result, readOutcome);
    if (!outcome.ok)
      return {
        ok: false,
        reason: outcome.reason,
        unit: { jobId: result.jobId, item: result.first, count: result.count },
      };
    return { ok: true, jobId: result.jobId, outcome: outcome.value };
  }
  if (!result.ok) return { ok: true, jobId: result.jobId, outcome: asUnit({ ...result, ok: false }) };
  if (result.partialBlob === undefined)
    return { ok: true, jobId: result.jobId, outcome: asUnit({ item: result.item, ok: true, partial: result.partial }) };
  const blob = keys.partial(result.jobId, result.item);
  const read = await readOutcome(blob);
  if ("refused" in read)
    return {
      ok: false,
      reason: `reading its partialBlob "${blob}" was refused: ${read.refused}`,
      unit: { jobId: result.jobId, item: result.item, count: 1 },
    };
  const outcome: ItemOutcome =
    "tooLarge" in read
      ? { item: result.item, ok: false, reason: `its partial result blob "${blob}" is not usable: ${read.tooLarge}` }
      : { item: result.item, ok: true, partial: parsedOrUndefined(read.text) };
  return { ok: true, jobId: result.jobId, outcome: asUnit(outcome) };
}

/**
 * The outcome a unit result reports (read from its blob when it names one). Every item of the unit is accounted for:
 * one the worker did not name is failed with a reason. A result naming items outside its unit is bad input.
 */
async function unitOutcomeOf(
  result: Omit<z.output<typeof unitResultMessageSchema>, "v">,
  readOutcome: OutcomeReader,
): Promise<{ ok: true; value: UnitOutcome } | { ok: false; reason: string }> {
  const { first, count } = result;
  let reported: { done: ItemRanges; partial?: unknown; failed: { items: ItemRanges; reason: string }[] } = result;
  if (result.outcomeBlob !== undefined) {
    // Only the blob its worker writes (or a worker of the version before, under its v1 partial's name): any other
    // name may be no blob name at all (storage answers 400), or another job's outcome.
    const expected = keys.outcome(result.jobId, first);
    if (result.outcomeBlob !== expected && result.outcomeBlob !== keys.partial(result.jobId, first))
      return {
        ok: false,
        reason: `its outcomeBlob ${JSON.stringify(result.outcomeBlob.slice(0, 200))} is not the blob its worker writes ("${expected}")`,
      };
    const read = await readOutcome(result.outcomeBlob);
    if ("refused" in read)
      return { ok: false, reason: `reading its outcomeBlob "${result.outcomeBlob}" was refused: ${read.refused}` };
    const parsed =
      "tooLarge" in read
        ? ({ ok: false, reason: read.tooLarge } as const)
        : read.text === undefined
          ? ({ ok: false, reason: "it is missing" } as const)
          : parseMessage(unitOutcomeSchema, read.text);
    reported = parsed.ok
      ? parsed.value
      : {
          done: [],
          failed: [
            {
              items: [[first, first + count - 1]],
              reason: `the unit's result blob "${result.outcomeBlob}" is not usable: ${parsed.reason}`.slice(0, 2000),
            },
          ],
        };
  }
  // Before expanding them: a range may name millions of items.
  const problem = rangesProblem(reported, first, count);
  if (problem !== undefined) return { ok: false, reason: problem };
  const done = fromRanges(reported.done);
  const failed = reported.failed.flatMap(({ items, reason }) => fromRanges(items).map((item) => ({ item, reason })));
  const named = new Set<number>();
  for (const item of [...done, ...failed.map((failure) => failure.item)]) {
    if (named.has(item))
      return { ok: false, reason: `item ${item} is named twice (items ${first}–${first + count - 1})` };
    named.add(item);
  }
  for (let item = first; item < first + count; item++)
    if (!named.has(item)) failed.push({ item, reason: "the worker's result for its unit did not report it" });
  return { ok: true, value: { done, partial: reported.partial, failed } };
}

/**
 * Why a unit's reported ranges cannot be its outcome, found without expanding them: a range not inside the unit, or
 * more items named than the unit has (so some twice). Undefined when they may be.
 */
function rangesProblem(
  reported: { done: ItemRanges; failed: { items: ItemRanges }[] },
  first: number,
  count: number,
): string | undefined {
  const last = first + count - 1;
  let named = 0;
  for (const [from, to] of [...reported.done, ...reported.failed.flatMap((failure) => failure.items)]) {
    if (from < first || to > last) return `items ${from}–${to} are not all in its unit (items ${first}–${last})`;
    named += to - from + 1;
    if (named > count) return `it names more items than its unit has (${count}, items ${first}–${last}): some twice`;
  }
  return undefined;
}

/** A v1 partial blob's JSON value; undefined for a missing blob or one that is not JSON (an invalid partial). */
function parsedOrUndefined(text: string | undefined): unknown {
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined; // reported as an invalid partial by the fold
  }
}
