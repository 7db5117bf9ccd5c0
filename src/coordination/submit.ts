import { randomUUID } from "node:crypto";
import { z } from "zod";
import { itemInputSchema } from "./messages";
import { keys, type JobSpec } from "./jobState";
import type { BlobFiles, PortOptions } from "./ports";
import type { TaskRegistry } from "./taskKinds";

/** Most items in one job. */
export const MAX_ITEMS_PER_JOB = 1_000_000;
/** Items per stored chunk: the leader reads one chunk per this many dispatched items. */
export const CHUNK_SIZE = 1000;

/** A job submission as users send it. */
export const submissionSchema = z.strictObject({
  kind: z.string().min(1).max(64),
  params: z.unknown(),
  items: z.array(itemInputSchema).min(1, "a job needs at least one item").max(MAX_ITEMS_PER_JOB, `at most ${MAX_ITEMS_PER_JOB} items per job`),
});
export type Submission = z.infer<typeof submissionSchema>;

/** A field-level problem with a submission. */
export interface FieldError {
  /** Dotted path of the field, e.g. `items.3.inline` or `params.keyField`. */
  field: string;
  message: string;
}

/** Validation result: the submission, or every field error. */
export type ValidatedSubmission = { ok: true; value: Submission } | { ok: false; errors: FieldError[] };

/** Validates a submission, including the task kind's own params, and returns every problem at once. */
export function validateSubmission(body: unknown, registry: TaskRegistry): ValidatedSubmission {
  const parsed = submissionSchema.safeParse(body);
  if (!parsed.success) return { ok: false, errors: parsed.error.issues.map((issue) => ({ field: issue.path.join(".") || "(body)", message: issue.message })) };
  const kind = registry.get(parsed.data.kind);
  if (kind === undefined) return { ok: false, errors: [{ field: "kind", message: `unknown task kind "${parsed.data.kind}"; known kinds: ${registry.names().join(", ")}` }] };
  const params = kind.paramsSchema.safeParse(parsed.data.params);
  if (!params.success) return { ok: false, errors: params.error.issues.map((issue) => ({ field: ["params", ...issue.path].join("."), message: issue.message })) };
  return { ok: true, value: { ...parsed.data, params: params.data } };
}

/**
 * Stores a validated submission for the leader to pick up: item chunks, then the spec, then an inbox marker (last, so
 * the leader never sees a half-written job). No coordinator state is written: that is the leader's, fenced.
 */
export async function storeSubmission(files: BlobFiles, submission: Submission, options: PortOptions & { now?: () => number } = {}): Promise<{ id: string; itemCount: number }> {
  const id = randomUUID();
  const { items } = submission;
  const writes: Promise<void>[] = [];
  for (let chunk = 0; chunk * CHUNK_SIZE < items.length; chunk++) {
    writes.push(files.writeText(keys.chunk(id, chunk), JSON.stringify(items.slice(chunk * CHUNK_SIZE, (chunk + 1) * CHUNK_SIZE)), options));
    if (writes.length >= 16) await Promise.all(writes.splice(0));
  }
  await Promise.all(writes);
  const spec: JobSpec = { v: 1, id, kind: submission.kind, params: submission.params, itemCount: items.length, chunkSize: CHUNK_SIZE, createdAtMs: (options.now ?? Date.now)() };
  await files.writeText(keys.spec(id), JSON.stringify(spec), options);
  await files.writeText(keys.inbox(id), "", options);
  return { id, itemCount: items.length };
}
