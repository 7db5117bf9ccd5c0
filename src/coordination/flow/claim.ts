/**
 * A granted unit's claim as stored (`jobs/<job>/grants/<grant>`, `worker/grantedUnit.ts`): the message id of the copy
 * that claimed it, then — once that copy ended — how: `reported` (its result or give-back was sent) or `released`
 * (its items failed transiently and stopped; the host retries it).
 */
export type ClaimEnd = "reported" | "released";

/** A claim's text once its claimant (the delivery of message `id`) ended as `end`. */
export function claimText(delivery: { id: string }, end: ClaimEnd): string {
  return `${delivery.id}\n${end}`;
}

/** Whether a claim's text says its claimant sent its report (whatever became of the report on its way). */
export function claimReported(text: string | undefined): boolean {
  return text?.endsWith("\nreported") === true;
}
