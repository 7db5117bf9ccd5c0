import { z } from "zod";

/**
 * Queue message shapes, validated with zod at every boundary. Producers and the Functions host agree on base64
 * encoding (host.json `messageEncoding`), which the queue adapter applies.
 */

/** Largest inline item input accepted, in bytes: a base64 queue message (64 KiB) must still hold it with its envelope. */
export const MAX_INLINE_ITEM_BYTES = 32 * 1024;

/** The name of a blob in the input container (1–1024 characters, not ending in '.' or '/'). */
export const inputBlobName = z.string().min(1).max(1024).regex(/^[^\\]*[^./\\]$/, "must be a blob name, not ending in '.' or '/'");

/** Item input: inline text, or the name of a blob in the input container. */
export const itemInputSchema = z.union([
  z.strictObject({ inline: z.string().refine((text) => Buffer.byteLength(text) <= MAX_INLINE_ITEM_BYTES, `inline input must be at most ${MAX_INLINE_ITEM_BYTES} bytes; put larger inputs in a blob and name it with { "blob": … }`) }),
  z.strictObject({ blob: inputBlobName }),
]);
export type ItemInput = z.infer<typeof itemInputSchema>;

const jobId = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "must be 1–63 lowercase letters, digits or '-'");

/** A unit of work on the work queue. */
export const workMessageSchema = z.strictObject({
  v: z.literal(1),
  jobId,
  item: z.number().int().min(0).max(10_000_000),
  kind: z.string().min(1).max(64),
  params: z.unknown(),
  input: itemInputSchema,
});
export type WorkMessage = z.infer<typeof workMessageSchema>;

/** A worker's report on the results queue: a partial result (inline or in a blob), or a failure with its reason. */
export const resultMessageSchema = z.union([
  z.strictObject({ v: z.literal(1), jobId, item: z.number().int().min(0), ok: z.literal(true), partial: z.unknown().optional(), partialBlob: z.string().optional() }),
  z.strictObject({ v: z.literal(1), jobId, item: z.number().int().min(0), ok: z.literal(false), reason: z.string().max(2000) }),
]);
export type ResultMessage = z.infer<typeof resultMessageSchema>;

/** Parses JSON text with a schema; returns the value or a one-line reason that says what was wrong. */
export function parseMessage<T>(schema: z.ZodType<T>, value: unknown): { ok: true; value: T } | { ok: false; reason: string } {
  let data = value;
  if (typeof value === "string") {
    try {
      data = JSON.parse(value);
    } catch {
      return { ok: false, reason: `not valid JSON: ${JSON.stringify(value.slice(0, 80))}` };
    }
  }
  const parsed = schema.safeParse(data);
  if (parsed.success) return { ok: true, value: parsed.data };
  return { ok: false, reason: describeIssues(parsed.error) };
}

/** One line per zod issue: `path: message`. */
export function describeIssues(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(message)"}: ${issue.message}`).join("; ");
}
