import type { StateStore } from "../../library/fencing/StateStore.js";
import type { Abortable } from "../../library/util/delay.js";
import type { BlobFiles, InputFiles } from "../ports/ports.js";
import { keys } from "../state/jobState.js";
import type { FieldError } from "../state/jobStatus.js";
import { claimKey, releaseClaim, submissionDigest } from "./idempotency.js";
import { openManifest, storeOpenedManifest, type OpenedManifest } from "./manifest.js";
import { storeSubmission, type Submission } from "./submit.js";

/**
 * Storing a submission that carries an idempotency key (`idempotency.ts`): the key claimed first, then the job written
 * under the claimed id, or the claimed job found — and completed when its first submitter died before its spec, or
 * before its inbox marker.
 */

/** What storing a keyed submission came to. */
export type StoredOnce =
  | {
      ok: true;
      id: string;
      itemCount: number;
      /** The key was claimed before, for the same submission: `id` is that first job's. */
      replayed: boolean;
      /** Whether this call wrote anything the leader has to pick up (the job, or its missing inbox marker). */
      wrote: boolean;
    }
  /** Field errors (400); with `conflict`, the key was used for another submission (409). */
  | { ok: false; errors: FieldError[]; conflict?: { jobId: string | undefined } };

/** The ports a keyed submission uses: the system container, the input container (manifests), and the state. */
export interface SubmitPorts {
  system: BlobFiles;
  inputs: InputFiles;
  state: StateStore;
}

/**
 * Stores a validated submission under its idempotency key: one job per key, however many submitters race, and
 * whichever of them dies midway (see `idempotency.ts`). A refused manifest releases the key (nothing is stored).
 */
export async function storeSubmissionOnce(
  ports: SubmitPorts,
  submission: Submission & { idempotencyKey: string },
  options: Abortable & { now?: () => number; chunkSize?: number } = {},
): Promise<StoredOnce> {
  const { idempotencyKey: key, ...fields } = submission;
  let opened: OpenedManifest | undefined;
  if (submission.manifest !== undefined) {
    const manifest = await openManifest(ports.inputs, submission.manifest, options);
    if (!manifest.ok) return manifest;
    opened = manifest.opened;
  }
  try {
    const claim = await claimKey(
      ports.system,
      { key, submissionDigest: submissionDigest(fields), manifestEtag: opened?.etag },
      options,
    );
    if (claim.outcome === "conflict")
      return {
        ok: false,
        errors: [{ field: "idempotencyKey", message: claim.message }],
        conflict: { jobId: claim.jobId },
      };
    const replayed = claim.outcome === "same";
    if (replayed) {
      const found = await findJob(ports, claim.jobId, options);
      if (found !== undefined) return { ok: true, id: claim.jobId, replayed, ...found };
    }
    const writing = { ...options, id: claim.jobId, once: true };
    const manifest = opened;
    opened = undefined; // closed by the reading
    const stored =
      manifest !== undefined
        ? await storeOpenedManifest(ports.system, manifest, submission, writing)
        : {
            ok: true as const,
            ...(await storeSubmission(ports.system, { ...submission, items: submission.items ?? [] }, writing)),
          };
    if (!stored.ok) {
      await releaseClaim(ports.system, key, claim.jobId, options);
      return stored;
    }
    // Another submitter's spec was there first: its inbox marker may be missing (it died in between).
    const wrote = stored.stored || (await ensureInboxMarker(ports, stored.id, options));
    return { ok: true, id: stored.id, itemCount: stored.itemCount, replayed, wrote };
  } finally {
    opened?.close();
  }
}

/**
 * The claimed job when its spec is stored: its item count, with its inbox marker written again if it has neither one
 * nor a state (its submitter died between the two). Undefined when the spec is missing: the job is still to write.
 */
async function findJob(
  ports: SubmitPorts,
  id: string,
  options: Abortable,
): Promise<{ itemCount: number; wrote: boolean } | undefined> {
  const text = await ports.system.readText(keys.spec(id), options);
  if (text === undefined) return undefined;
  let itemCount = 0;
  try {
    const spec: unknown = JSON.parse(text);
    if (typeof spec === "object" && spec !== null && "itemCount" in spec && typeof spec.itemCount === "number")
      itemCount = spec.itemCount;
  } catch {
    // A damaged spec: the job's status says so; the count is unknown.
  }
  return { itemCount, wrote: await ensureInboxMarker(ports, id, options) };
}

/**
 * Writes the job's inbox marker unless it has one or a state (registered). A marker written again for a job the
 * leader registers meanwhile changes nothing (`registerJobs`). Returns whether it wrote it.
 */
async function ensureInboxMarker(ports: SubmitPorts, id: string, options: Abortable): Promise<boolean> {
  if ((await ports.system.readText(keys.inbox(id), options)) !== undefined) return false;
  if ((await ports.state.readSummary(keys.jobState(id), options)) !== undefined) return false;
  await ports.system.writeText(keys.inbox(id), "", options);
  return true;
}
