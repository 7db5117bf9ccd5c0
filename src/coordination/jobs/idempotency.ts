import { createHash, randomUUID } from "node:crypto";
import { z } from "zod";
import type { Abortable } from "../../library/util/delay.js";
import type { BlobFiles } from "../ports/ports.js";
import { MAX_IDEMPOTENCY_KEY_LENGTH } from "../state/jobSchedule.js";
import { keys } from "../state/jobState.js";
import type { FieldError } from "../state/jobStatus.js";

/**
 * One job per submission (docs/contributing/flow-control-submission.md, "Idempotency"). A submission may carry an
 * idempotency key (the body's `idempotencyKey`, or the `Idempotency-Key` header). Before any blob of the job is
 * written, the submitter creates the key's claim — `idempotency/<SHA-256 of the key>` in the system container,
 * create-if-absent — naming a new job id and the digest of the submission (and the manifest blob's ETag). Whoever loses
 * that race reads the claim: the same digest is the same submission, answered with the claimed job's id (and completed,
 * if its first submitter died before its spec); another digest is refused (409). So any number of concurrent submits
 * with one key make one job, and every writer of that job writes the same bytes. The claim is removed with its job
 * (retention), and a leader registers a keyed job only while its claim names it.
 */

const KEY_MESSAGE = `must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters (space to ~), e.g. a UUID`;

/** The `idempotencyKey` field of a submission (and the header's value, once unquoted). */
export const idempotencyKeySchema = z
  .string({ error: KEY_MESSAGE })
  .min(1, KEY_MESSAGE)
  .max(MAX_IDEMPOTENCY_KEY_LENGTH, KEY_MESSAGE)
  .regex(/^[\x20-\x7e]+$/, KEY_MESSAGE);

/** The HTTP header of the IETF draft (draft-ietf-httpapi-idempotency-key-header), case-insensitive. */
export const IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

/**
 * The key a submission is made under: the body's `idempotencyKey` or the header's value (an RFC 8941 string, `"…"`, as
 * the draft defines it; a bare value is taken as it is). Both given must be equal: a client that sends two different
 * keys has a bug that would break its retries, so neither wins and the submission is refused.
 */
export function resolveIdempotencyKey(
  bodyKey: string | undefined,
  headerValue: string | undefined,
): { ok: true; key: string | undefined } | { ok: false; error: FieldError } {
  if (headerValue === undefined) return { ok: true, key: bodyKey };
  const headerKey = unquote(headerValue.trim());
  const parsed = idempotencyKeySchema.safeParse(headerKey);
  if (!parsed.success) return { ok: false, error: { field: IDEMPOTENCY_KEY_HEADER, message: KEY_MESSAGE } };
  if (bodyKey !== undefined && bodyKey !== parsed.data)
    return {
      ok: false,
      error: {
        field: "idempotencyKey",
        message: `differs from the ${IDEMPOTENCY_KEY_HEADER} header; give the key once, or the same in both`,
      },
    };
  return { ok: true, key: parsed.data };
}

/** An RFC 8941 sf-string's content (`"a\"b"` → `a"b`); any other value as it is. */
function unquote(value: string): string {
  if (value.length < 2 || !value.startsWith('"') || !value.endsWith('"')) return value;
  return value.slice(1, -1).replace(/\\(["\\])/g, "$1");
}

/** The SHA-256 of an idempotency key, in hex: its claim's name. */
export function keyDigest(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/**
 * The digest of a submission (without its idempotency key): SHA-256 of its JSON with every object's keys sorted, so
 * two bodies that differ only in the order of their fields are the same submission.
 */
export function submissionDigest(submission: object): string {
  return createHash("sha256").update(canonicalJson(submission), "utf8").digest("hex");
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((entry) => canonicalJson(entry)).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const fields = Object.entries(value)
      .filter(([, entry]) => entry !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, entry]) => `${JSON.stringify(name)}:${canonicalJson(entry)}`);
    return `{${fields.join(",")}}`;
  }
  // undefined (an absent field's) and functions have no JSON: as JSON.stringify writes them in an array.
  return typeof value === "undefined" || typeof value === "function" ? "null" : JSON.stringify(value);
}

/** A claim as stored: at most a few hundred bytes (the key is at most 200 ASCII characters). */
export const claimSchema = z.looseObject({
  v: z.literal(1),
  key: z.string(),
  jobId: z.string(),
  submissionDigest: z.string(),
  /** The manifest blob's ETag when the submission named one: a retry reads the same version or is refused. */
  manifestEtag: z.string().optional(),
  createdAtMs: z.number(),
});
export type Claim = z.infer<typeof claimSchema>;

/** What claiming a key found. */
export type ClaimOutcome =
  /** The claim is new: this submitter writes the job. */
  | { outcome: "claimed"; jobId: string }
  /** The key was claimed for the same submission: its job (complete it if its spec is missing). */
  | { outcome: "same"; jobId: string }
  /** The key was claimed for another submission (or another version of the manifest): refused. */
  | { outcome: "conflict"; jobId: string | undefined; message: string };

/** Most rounds of create-then-read (a claim removed between the two: its job's retention, a refused submission). */
const CLAIM_ATTEMPTS = 3;

/** Claims `key` for a submission with this digest (and manifest ETag), or says whose it is. One request when new. */
export async function claimKey(
  system: BlobFiles,
  claim: { key: string; submissionDigest: string; manifestEtag?: string | undefined },
  options: Abortable & { now?: () => number } = {},
): Promise<ClaimOutcome> {
  const name = keys.claim(keyDigest(claim.key));
  for (let attempt = 1; ; attempt++) {
    const jobId = randomUUID();
    const stored: Claim = {
      v: 1,
      key: claim.key,
      jobId,
      submissionDigest: claim.submissionDigest,
      ...(claim.manifestEtag === undefined ? {} : { manifestEtag: claim.manifestEtag }),
      createdAtMs: (options.now ?? Date.now)(),
    };
    if (await system.createText(name, JSON.stringify(stored), options)) return { outcome: "claimed", jobId };
    const existing = await readClaim(system, name, options);
    if (existing === "absent") {
      if (attempt < CLAIM_ATTEMPTS) continue;
      throw new Error(`The idempotency claim ${name} was removed each time it was read; try again.`);
    }
    return compare(existing, claim, name);
  }
}

function compare(
  existing: Claim | "damaged",
  claim: { key: string; submissionDigest: string; manifestEtag?: string | undefined },
  name: string,
): ClaimOutcome {
  if (existing === "damaged")
    return {
      outcome: "conflict",
      jobId: undefined,
      message: `the key's claim (blob ${name} in the system container) is damaged; use another key, or delete the blob`,
    };
  const { jobId } = existing;
  if (existing.key !== claim.key || existing.submissionDigest !== claim.submissionDigest)
    return {
      outcome: "conflict",
      jobId,
      message: `was used for a different submission (job ${jobId}); a retry must send the same body, and a new submission a new key`,
    };
  if (existing.manifestEtag !== claim.manifestEtag)
    return {
      outcome: "conflict",
      jobId,
      message: `was used for this submission when its manifest blob had other content (job ${jobId}); a changed manifest is a new submission: use a new key`,
    };
  return { outcome: "same", jobId };
}

async function readClaim(system: BlobFiles, name: string, options: Abortable): Promise<Claim | "damaged" | "absent"> {
  const text = await system.readText(name, options);
  if (text === undefined) return "absent";
  try {
    const parsed = claimSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : "damaged";
  } catch {
    return "damaged";
  }
}

/** Whether the key's claim names this job: a leader registers a keyed job only then. */
export async function claimNames(
  system: BlobFiles,
  key: string,
  jobId: string,
  options: Abortable = {},
): Promise<boolean> {
  const claim = await readClaim(system, keys.claim(keyDigest(key)), options);
  return typeof claim === "object" && claim.jobId === jobId;
}

/**
 * Removes the key's claim if it names this job: when its submission was refused (nothing of it is kept, so the key
 * may be used again), or when the job is removed (retention: the key is remembered as long as its job).
 */
export async function releaseClaim(
  system: BlobFiles,
  key: string,
  jobId: string,
  options: Abortable = {},
): Promise<void> {
  if (await claimNames(system, key, jobId, options)) await system.delete(keys.claim(keyDigest(key)), options);
}
