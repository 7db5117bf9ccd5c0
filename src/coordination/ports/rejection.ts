import type { Rejection } from "./messages.js";

/**
 * Most bytes of a rejection's JSON text. Its base64 form on the poison queue (4/3 as long) then takes at most 54 KiB,
 * within the 64 KiB Azure allows a message: a rejection that does not fit would fail on every attempt to send it.
 */
export const MAX_REJECTION_BYTES = 40 * 1024;

/** Longest reason a rejection keeps (a failed item's reason keeps as many). */
export const MAX_REJECTION_REASON_LENGTH = 2000;

/** What a rejection says besides its original: who rejected the message, why, and which message it was. */
export type RejectionHeader = Rejection["rejected"] & { messageId: string; atMs: number };

/** A reason cut to {@link MAX_REJECTION_REASON_LENGTH}, as a rejection, its log line and its event carry it. */
export function rejectionReason(reason: string): string {
  return reason.length <= MAX_REJECTION_REASON_LENGTH ? reason : `${reason.slice(0, MAX_REJECTION_REASON_LENGTH - 1)}…`;
}

/**
 * The JSON text of a rejection for a poison queue, at most {@link MAX_REJECTION_BYTES} whatever it carries: the
 * reason is cut to {@link MAX_REJECTION_REASON_LENGTH} characters, and the original to the longest beginning that
 * fits (JSON escapes some characters six-fold, so the cut is measured on the escaped text); a cut original comes with
 * `originalLength`, its whole length in characters.
 */
export function rejectionText(header: RejectionHeader, original: string): string {
  const rejected = { ...header, reason: rejectionReason(header.reason) };
  const whole = JSON.stringify({ rejected, original });
  if (Buffer.byteLength(whole) <= MAX_REJECTION_BYTES) return whole;
  const cut = (length: number): string =>
    JSON.stringify({ rejected: { ...rejected, originalLength: original.length }, original: original.slice(0, length) });
  // The longest beginning of the original that fits: a binary search over its length.
  let [fits, fitsNot] = [0, original.length];
  while (fitsNot - fits > 1) {
    const middle = Math.floor((fits + fitsNot) / 2);
    if (Buffer.byteLength(cut(middle)) <= MAX_REJECTION_BYTES) fits = middle;
    else fitsNot = middle;
  }
  return cut(fits);
}

/**
 * A message body as text for a rejection's `original`: a string as it is, anything else as JSON — or, when it cannot
 * be written as JSON (nested too deeply for the stack, say), a note saying why. Never throws.
 */
export function originalText(payload: unknown): string {
  if (typeof payload === "string") return payload;
  try {
    // Undefined for a value JSON cannot hold (undefined, a function).
    const json = JSON.stringify(payload) as string | undefined;
    return json ?? String(payload);
  } catch (error) {
    return `(the message could not be written as JSON: ${error instanceof Error ? error.message : "unknown error"})`;
  }
}
