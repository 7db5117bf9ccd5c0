import { z } from "zod";

/**
 * Queue message shapes, validated with zod at every boundary. Producers and the Functions host agree on base64
 * encoding (host.json `messageEncoding`), which the queue adapter applies.
 */

/** Most bytes of JSON a work message may have: its base64 form (4 bytes per 3) fills a 64 KiB queue message. */
export const MAX_WORK_MESSAGE_BYTES = 48 * 1024;

/**
 * Most bytes an outcome blob may have: the JSON of a unit's outcome (its done and failed items and its merged partial)
 * too large for a queue message, 16 MiB. The leader reads no larger one — it fails the unit's items with
 * {@link outcomeTooLarge} instead —, so that a fold's memory stays bounded whatever results hold; a worker whose
 * outcome would be larger reports its items failed with the same reason rather than write a blob the leader refuses.
 * A unit's partial holds its items' distinct groups: 16 MiB is some 200,000 (`MAX_AGGREGATE_GROUPS`) with keys of 40
 * characters.
 */
export const MAX_OUTCOME_BYTES = 16 * 1024 * 1024;

/** Why a unit's outcome of `bytes` bytes of JSON (at least) is not folded: more than {@link MAX_OUTCOME_BYTES}. */
export function outcomeTooLarge(bytes: number, atLeast = false): string {
  return `its outcome is ${atLeast ? "more than " : ""}${bytes} bytes of JSON, more than an outcome may have (MAX_OUTCOME_BYTES, ${MAX_OUTCOME_BYTES} bytes): its merged partial result holds too many groups, or too long ones`;
}

/**
 * Largest inline item a submission may hold, in bytes of its JSON form (`{"inline":"…"}`, as a work message carries
 * it: quotes, backslashes and line breaks take 2 bytes, other control characters 6). With params of at most
 * {@link MAX_PARAMS_BYTES} and the rest of the envelope, a work message of one such item stays within
 * {@link MAX_WORK_MESSAGE_BYTES}. A stored or queued item is held to this many bytes of text.
 */
export const MAX_INLINE_ITEM_BYTES = 40 * 1024;

/** Largest params a submission may have, in bytes of JSON: every work message of the job carries them. */
export const MAX_PARAMS_BYTES = 4 * 1024;

/**
 * The name of a blob in the input container: 1–1024 characters, no backslash, not ending in '.' or '/', and no "." or
 * ".." segment — storage URLs resolve those, so "../other/x" would name blob x of container "other".
 */
export const inputBlobName = z
  .string()
  .min(1)
  .max(1024)
  .regex(/^[^\\]*[^./\\]$/, "must be a blob name, not ending in '.' or '/'")
  .refine(
    (name) => !name.split("/").some((segment) => segment === "." || segment === ".."),
    'blob names may not contain "." or ".." segments: the storage URL would resolve them to another blob, even one outside the input container; name the blob as it is, e.g. "sales/2026/a.csv"',
  );

/**
 * Item input as stored in a job's chunks and carried by work messages: inline text (at most
 * {@link MAX_INLINE_ITEM_BYTES} bytes of it: what any submission, of this version or an earlier one, could hold), or
 * the name of a blob in the input container. A submission's items are held to {@link submittedItemSchema}.
 */
export const itemInputSchema = z.union([
  z.strictObject({
    inline: z
      .string()
      .refine(
        (text) => Buffer.byteLength(text) <= MAX_INLINE_ITEM_BYTES,
        `inline input must be at most ${MAX_INLINE_ITEM_BYTES} bytes; put larger inputs in a blob and name it with { "blob": … }`,
      ),
  }),
  z.strictObject({ blob: inputBlobName }),
]);
export type ItemInput = z.infer<typeof itemInputSchema>;

/**
 * An item of a submission (in the request or a manifest line): inline text whose JSON form is at most
 * {@link MAX_INLINE_ITEM_BYTES} bytes — counted as a work message will carry it, escapes included — or a blob name.
 */
export const submittedItemSchema = z.union([
  z.strictObject({
    inline: z.string().superRefine((inline, context) => {
      const bytes = Buffer.byteLength(JSON.stringify({ inline }));
      if (bytes > MAX_INLINE_ITEM_BYTES)
        context.addIssue({
          code: "custom",
          message: `the item is ${bytes} bytes as JSON, as a work message carries it (quotes, backslashes and line breaks take 2 bytes, other control characters 6); at most ${MAX_INLINE_ITEM_BYTES} are allowed so that its work message fits a 64 KiB queue message; put larger inputs in a blob and name it with { "blob": … }`,
        });
    }),
  }),
  z.strictObject({ blob: inputBlobName }),
]);

const jobId = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "must be 1–63 lowercase letters, digits or '-'");
const itemIndex = z.number().int().min(0).max(10_000_000);

/** Most items one work unit may carry (WORK_UNIT_MAX_ITEMS allows up to this). */
export const MAX_UNIT_ITEMS = 1_000;

/** One item on the work queue: what leaders before work units sent (still processed, and answered in kind). */
export const itemWorkMessageSchema = z.strictObject({
  v: z.literal(1),
  jobId,
  item: itemIndex,
  kind: z.string().min(1).max(64),
  params: z.unknown(),
  input: itemInputSchema,
});

/** A unit of work on the work queue: the inputs of items `first`, `first + 1`, … of one job. */
export const unitWorkMessageSchema = z.strictObject({
  v: z.literal(2),
  jobId,
  first: itemIndex,
  kind: z.string().min(1).max(64),
  params: z.unknown(),
  inputs: z.array(itemInputSchema).min(1).max(MAX_UNIT_ITEMS),
});

/** Most pools one grant names: the kind's, the job's own, and one per distinct key of its unit (at most 16). */
export const MAX_GRANT_POOLS = 18;

/**
 * A unit's grant, as its work message carries it: its shares of each limit it counts against (`pools`; `every` names
 * those all its items count against, `keys` the one each item's key does, as runs `[pool index, items]` in item order
 * with -1 for none), and when it expires — its worker starts no item from then on (its own clock).
 */
export const workGrantSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, "must be 8–64 letters, digits, '_' or '-'"),
  expiresAtMs: z.number().int().min(0),
  pools: z
    .array(
      z.strictObject({
        id: z.string().max(200),
        c: z.number().int().min(1).max(10_000).optional(),
        r: z.number().int().min(1).max(100_000).optional(),
        w: z.number().min(1).max(86_400_000).optional(),
      }),
    )
    .min(1)
    .max(MAX_GRANT_POOLS),
  every: z
    .array(
      z
        .number()
        .int()
        .min(0)
        .max(MAX_GRANT_POOLS - 1),
    )
    .max(2),
  keys: z
    .array(
      z.tuple([
        z
          .number()
          .int()
          .min(-1)
          .max(MAX_GRANT_POOLS - 1),
        z.number().int().min(1).max(MAX_UNIT_ITEMS),
      ]),
    )
    .max(MAX_UNIT_ITEMS)
    .optional(),
});
export type WorkGrant = z.infer<typeof workGrantSchema>;

/**
 * A unit of a job whose kind (or the job itself) has limits: the inputs of items `first`, `first + 1`, … and the
 * unit's grant. Its pool indexes name pools it has, and its key runs cover its items exactly.
 */
export const grantedWorkMessageSchema = unitWorkMessageSchema
  .extend({ v: z.literal(3), grant: workGrantSchema })
  .superRefine((message, context) => {
    const { pools, every, keys } = message.grant;
    const indexes = [...every, ...(keys ?? []).map(([pool]) => pool).filter((pool) => pool >= 0)];
    if (indexes.some((index) => index >= pools.length))
      context.addIssue({
        code: "custom",
        path: ["grant"],
        message: `names a pool it does not have (it has ${pools.length})`,
      });
    if (keys !== undefined && keys.reduce((sum, [, items]) => sum + items, 0) !== message.inputs.length)
      context.addIssue({
        code: "custom",
        path: ["grant", "keys"],
        message: `its runs do not cover its ${message.inputs.length} items`,
      });
  });
export type GrantedWorkMessage = z.infer<typeof grantedWorkMessageSchema>;

/** A work message: a unit of items (with a grant when its job is limited), or one item (v1). */
export const workMessageSchema = z.discriminatedUnion("v", [
  unitWorkMessageSchema,
  grantedWorkMessageSchema,
  itemWorkMessageSchema,
]);
export type WorkMessage = z.infer<typeof workMessageSchema>;
export type UnitWorkMessage = z.infer<typeof unitWorkMessageSchema>;

/** A worker's report on the results queue: a partial result (inline or in a blob), or a failure with its reason. */
export const itemResultMessageSchema = z.union([
  z.strictObject({
    v: z.literal(1),
    jobId,
    item: z.number().int().min(0),
    ok: z.literal(true),
    partial: z.unknown().optional(),
    partialBlob: z.string().optional(),
  }),
  z.strictObject({
    v: z.literal(1),
    jobId,
    item: z.number().int().min(0),
    ok: z.literal(false),
    reason: z.string().max(2000),
  }),
]);

/**
 * Inclusive ranges of item indexes, `[first, last]`, e.g. `[[0, 30], [32, 32]]`: at most one per item of a unit. The
 * leader checks them against their unit before it expands them (a range may name millions of items).
 */
export const itemRangesSchema = z
  .array(z.tuple([itemIndex, itemIndex]).refine(([a, b]) => a <= b, "a range's first item must not follow its last"))
  .max(MAX_UNIT_ITEMS);
export type ItemRanges = z.infer<typeof itemRangesSchema>;

/**
 * What a worker reports for a unit: the items done (their partials merged into one), and the failed ones with reasons.
 */
export const unitOutcomeSchema = z.strictObject({
  done: itemRangesSchema,
  partial: z.unknown().optional(),
  failed: z.array(z.strictObject({ items: itemRangesSchema, reason: z.string().max(2000) })).max(MAX_UNIT_ITEMS),
});
export type UnitOutcomeReport = z.infer<typeof unitOutcomeSchema>;

/**
 * One result for a whole unit `[first, first + count)`: the outcome inline, or — when it would not fit a queue
 * message — `outcomeBlob`, the name of the blob in the system container holding it (`keys.outcome` in jobState.ts; then
 * `done` and `failed` are empty).
 */
export const unitResultMessageSchema = z.strictObject({
  v: z.literal(2),
  jobId,
  first: itemIndex,
  count: z.number().int().min(1).max(MAX_UNIT_ITEMS),
  done: itemRangesSchema.default([]),
  partial: z.unknown().optional(),
  failed: unitOutcomeSchema.shape.failed.default([]),
  outcomeBlob: z.string().optional(),
});
export type UnitResultMessage = z.input<typeof unitResultMessageSchema>;

/**
 * What a granted unit's copy reports of its grant: its id (the leader takes its shares back), how long before sending
 * the result its last item started (its rate permits are free a window after) and how many started; `regrant` when it
 * processed nothing that counts — its grant expired before or while it ran, or its job stopped — so the unit is sent
 * again, whole, with a new grant (its items done so far are processed again, as on any redelivery).
 */
export const grantReportSchema = z.strictObject({
  id: workGrantSchema.shape.id,
  lastStartAgoMs: z.number().int().min(0).optional(),
  starts: z.number().int().min(0).max(MAX_UNIT_ITEMS),
  regrant: z.literal(true).optional(),
  /**
   * With `regrant`: another copy of the unit may still run under this grant (this delivery came after one that may be
   * frozen, not ended), so the leader holds its shares until the grant expires.
   */
  held: z.literal(true).optional(),
  /** With `regrant`: the grant expired before every item started (the unit's next grant lasts longer). */
  expired: z.literal(true).optional(),
  /** With `regrant` and `held`: an earlier delivery claimed the grant and never reported (it died or froze). */
  lost: z.literal(true).optional(),
});
export type GrantReport = z.infer<typeof grantReportSchema>;

/** A granted unit's result: a v2 result and its grant's report. */
export const grantedResultMessageSchema = unitResultMessageSchema.extend({
  v: z.literal(3),
  grant: grantReportSchema,
});
export type GrantedResultMessage = z.input<typeof grantedResultMessageSchema>;

export const resultMessageSchema = z.union([
  unitResultMessageSchema,
  grantedResultMessageSchema,
  itemResultMessageSchema,
]);
export type ResultMessage = z.infer<typeof resultMessageSchema>;

/** Just the job and items a result names, whatever else it holds (or lacks). */
const resultUnitSchema = z.union([
  z
    .object({
      v: z.union([z.literal(2), z.literal(3)]),
      jobId,
      first: itemIndex,
      count: unitResultMessageSchema.shape.count,
    })
    .transform((unit) => ({ jobId: unit.jobId, item: unit.first, count: unit.count })),
  z
    .object({ v: z.literal(1), jobId, item: itemIndex })
    .transform((one) => ({ jobId: one.jobId, item: one.item, count: 1 })),
]);

/**
 * The job and items a result message's JSON text names, when it parses that far — even if the rest of it is not a
 * valid result; undefined otherwise.
 */
export function resultUnitOf(text: string): ItemRef | undefined {
  const parsed = resultUnitSchema.safeParse(parseJson(text));
  return parsed.success ? parsed.data : undefined;
}

/** The newest result-message format version this version reads. */
export const RESULT_VERSION = 3;

/**
 * A result of a format version newer than this version reads (a newer worker during a rolling deploy): its version,
 * and the unit it names when it names one as a v2 result does; undefined for any other text.
 */
export function newerResultOf(text: string): { version: number; unit: ItemRef | undefined } | undefined {
  const json = parseJson(text);
  if (typeof json !== "object" || json === null || !("v" in json) || typeof json.v !== "number") return undefined;
  if (json.v <= RESULT_VERSION) return undefined;
  const unit = z.object({ jobId, first: itemIndex, count: unitResultMessageSchema.shape.count }).safeParse(json);
  return {
    version: json.v,
    unit: unit.success ? { jobId: unit.data.jobId, item: unit.data.first, count: unit.data.count } : undefined,
  };
}

/** Sorted item indexes as inclusive ranges. */
export function toRanges(items: readonly number[]): ItemRanges {
  const ranges: ItemRanges = [];
  for (const item of items) {
    const last = ranges.at(-1);
    if (last !== undefined && item === last[1] + 1) last[1] = item;
    else ranges.push([item, item]);
  }
  return ranges;
}

/** The item indexes of inclusive ranges. */
export function fromRanges(ranges: ItemRanges): number[] {
  return ranges.flatMap(([first, last]) => Array.from({ length: last - first + 1 }, (_, offset) => first + offset));
}

/** The job and items a message names: `count` items from `item` (one for a v1 message). */
export interface ItemRef {
  jobId: string;
  item: number;
  count: number;
}

/** Just the job and items of a message, whatever else it holds (or lacks). */
const itemRefSchema = z.union([
  z
    .object({
      v: z.union([z.literal(2), z.literal(3)]),
      jobId,
      first: itemIndex,
      inputs: z.array(z.unknown()).min(1).max(MAX_UNIT_ITEMS),
    })
    .transform((unit) => ({ jobId: unit.jobId, item: unit.first, count: unit.inputs.length })),
  z.object({ jobId, item: itemIndex }).transform((one) => ({ jobId: one.jobId, item: one.item, count: 1 })),
]);

/** Just the grant a message names (a granted unit's work message or result), whatever else it holds (or lacks). */
const namedGrantSchema = z.object({ grant: z.object({ id: workGrantSchema.shape.id }) });

/**
 * The grant a work message, a result or a poison rejection's original (JSON text or a parsed value) names, when it
 * names one; undefined otherwise. Its id is all a leader needs to take the grant's shares back.
 */
export function grantIdOf(message: unknown): string | undefined {
  const parsed = namedGrantSchema.safeParse(typeof message === "string" ? parseJson(message) : message);
  return parsed.success ? parsed.data.grant.id : undefined;
}

/**
 * The job and items a message (JSON text or a parsed value) names, when it parses that far — even if the rest of it
 * is not a valid work message; undefined otherwise.
 */
export function itemRefOf(message: unknown): ItemRef | undefined {
  const parsed = itemRefSchema.safeParse(typeof message === "string" ? parseJson(message) : message);
  return parsed.success ? parsed.data : undefined;
}

/**
 * What the worker, or the leader, puts on a poison queue for a message it rejected: the reason, who rejected it, the
 * job and item when the original named them, and the original body. Versions before `by` existed wrote no `by`,
 * `jobId` or `item`; the leader's rejections always name the `queue` they came from.
 */
export const rejectionSchema = z.object({
  rejected: z.object({
    reason: z.string(),
    by: z.enum(["worker", "leader"]).optional(),
    queue: z.string().optional(),
    jobId: jobId.optional(),
    item: itemIndex.optional(),
    /** Items the rejected unit held, from `item` (1 when absent). */
    count: z.number().int().min(1).max(MAX_UNIT_ITEMS).optional(),
  }),
  original: z.string().optional(),
});
export type Rejection = z.infer<typeof rejectionSchema>;

/** Longest reason kept for a failed item. */
const MAX_REASON_LENGTH = 2000;

/** The items a work-poison message accounts for (`count` from `item`), and why they failed. */
export interface PoisonClaim extends ItemRef {
  reason: string;
}

/**
 * Which items a message on the work poison queue accounts for, and why it failed: a work message the host moved there
 * after its retries ran out, or the worker's rejection of a work message that named its job and item (including a
 * rejection written before rejections named them: then its original is read), as the message states them: the leader
 * fails only those a unit of the job can hold and the job has sent (`unitFailures`, applyOutcomes.ts), since `count` is
 * whatever the message says. Undefined when no job can claim it —
 * undecodable text, a rejection of a message that named no item, or a rejection the leader itself wrote, which is
 * left for a person.
 */
export function claimPoison(text: string | undefined, poisonQueue: string): PoisonClaim | undefined {
  if (text === undefined) return undefined;
  const value = parseJson(text);
  const rejection = rejectionSchema.safeParse(value);
  if (rejection.success) {
    const { rejected, original } = rejection.data;
    if (rejected.by === "leader" || rejected.queue !== undefined) return undefined;
    const ref =
      rejected.jobId !== undefined && rejected.item !== undefined
        ? { jobId: rejected.jobId, item: rejected.item, count: rejected.count ?? 1 }
        : itemRefOf(original);
    return ref && { ...ref, reason: `rejected by the worker: ${rejected.reason}`.slice(0, MAX_REASON_LENGTH) };
  }
  const ref = itemRefOf(value);
  return (
    ref && {
      ...ref,
      reason: `retries exhausted: the host moved its work message to ${poisonQueue} after its last failed delivery`,
    }
  );
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Parses JSON text with a schema; returns the value or a one-line reason that says what was wrong. */
export function parseMessage<T>(
  schema: z.ZodType<T>,
  value: unknown,
): { ok: true; value: T } | { ok: false; reason: string } {
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
  return error.issues
    .map((issue) => `${issue.path.length > 0 ? issue.path.join(".") : "(message)"}: ${issue.message}`)
    .join("; ");
}
