import { z } from "zod";
import type { StateStore } from "../../library/fencing/StateStore.js";
import { isCancelRequested } from "./cancel.js";
import {
  JOB_FORMAT_VERSION,
  formatVersion,
  isJobId,
  jobSpecSchema,
  keys,
  readJobDocument,
  readJobState,
  UnreadableJobError,
} from "../state/jobState.js";
import { heldCount } from "../state/heldItems.js";
import type { BlobFiles } from "../ports/ports.js";
import type { TaskRegistry } from "../kinds/taskRegistry.js";
import type { Abortable } from "../../library/util/delay.js";
import type { JobStatus } from "../state/jobStatus.js";
import type { StoredSchedule } from "../state/jobSchedule.js";

export type { JobStatus } from "../state/jobStatus.js";

/**
 * What a spec of a newer format version must still hold for its job to be shown as pending: the fields this version
 * shows, in the types it knows.
 */
const newerSpecSchema = z.looseObject({
  kind: z.string(),
  itemCount: z.number().int().min(1),
  createdAtMs: z.number(),
  deadlineAtMs: z.number().optional(),
});

/** What a status shows of a job's scheduling: each field only when the job has it (`jobSchedule.ts`). */
function scheduleView(
  job: StoredSchedule,
): Pick<JobStatus, "priority" | "fairnessKey" | "notBefore" | "idempotencyKey"> {
  return {
    ...(job.priority === undefined ? {} : { priority: job.priority }),
    ...(job.fairnessKey === undefined ? {} : { fairnessKey: job.fairnessKey }),
    ...(job.notBeforeAtMs === undefined ? {} : { notBefore: new Date(job.notBeforeAtMs).toISOString() }),
    ...(job.idempotencyKey === undefined ? {} : { idempotencyKey: job.idempotencyKey }),
  };
}

/**
 * Reads a job's status without the lease (any instance may). Undefined when no such job exists. A pending job whose
 * spec is of a newer format version (left in the inbox for a leader that reads it) is shown with what this version can
 * read of it, and a `notice` saying why.
 *
 * @throws UnreadableJobError when the job's state or spec is not one this version reads (a newer version wrote it,
 *   or it is damaged), naming the document and why.
 */
export async function readJobStatus(
  state: StateStore,
  system: BlobFiles,
  registry: TaskRegistry,
  id: string,
  options: Abortable & { now?: () => number } = {},
): Promise<JobStatus | undefined> {
  if (!isJobId(id)) return undefined;
  const stored = await readJobState(state, id, options);
  if (stored !== undefined) {
    if (!stored.ok) throw new UnreadableJobError(id, stored.reason);
    const job = stored.value;
    const kind = registry.get(job.kind);
    const partial = kind?.parsePartial(job.aggregate);
    const held = heldCount(job);
    const aggregate = kind !== undefined && partial?.ok === true ? kind.view(partial.value) : job.aggregate;
    // Registered, nothing sent yet, its time not come: scheduled (the leader's clock decides; this is the reader's).
    const waiting =
      job.status === "running" && job.dispatched === 0 && (job.notBeforeAtMs ?? 0) > (options.now ?? Date.now)();
    return {
      id,
      kind: job.kind,
      status: waiting ? "scheduled" : job.status,
      ...(job.failureReason === undefined ? {} : { failureReason: job.failureReason }),
      progress: {
        total: job.itemCount,
        dispatched: job.dispatched,
        done: job.doneCount,
        failed: job.failedCount,
        skipped: job.skippedCount ?? 0,
        ...(held > 0 ? { held } : {}),
      },
      aggregate,
      failures: job.failures,
      createdAt: new Date(job.createdAtMs).toISOString(),
      completedAt: isoTime(job.completedAtMs),
      endedAt: isoTime(job.completedAtMs ?? job.endedAtMs),
      deadline: isoTime(job.deadlineAtMs),
      ...(held > 0 ? { heldUntil: isoTime(job.heldUntilMs) } : {}),
      ...scheduleView(job),
      ...(job.status === "running" && (await isCancelRequested(system, id, options))
        ? { cancelRequested: true as const }
        : {}),
      lastEpoch: job.lastEpoch,
    };
  }
  return readPendingStatus(system, id, options);
}

/**
 * The status of a job that has no state yet — submitted, still in the inbox — from its spec alone (never its state
 * document); undefined when there is no such job. A job registered meanwhile still shows as pending.
 */
export async function readPendingStatus(
  system: BlobFiles,
  id: string,
  options: Abortable = {},
): Promise<JobStatus | undefined> {
  if (!isJobId(id)) return undefined;
  const specText = await system.readText(keys.spec(id), options);
  if (specText === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(specText);
  } catch (error) {
    throw new UnreadableJobError(id, `its spec is not valid JSON (${String(error)}): it is damaged`, { cause: error });
  }
  const spec = readJobDocument(jobSpecSchema, "its spec", json);
  let shown: z.infer<typeof newerSpecSchema>;
  if (spec.ok) shown = spec.value;
  else {
    // A newer version's spec, waiting in the inbox for a leader of that version: shown with what this version knows.
    const version = formatVersion(json);
    const newer = version !== undefined && version > JOB_FORMAT_VERSION ? newerSpecSchema.safeParse(json) : undefined;
    if (newer?.success !== true) throw new UnreadableJobError(id, spec.reason);
    shown = newer.data;
  }
  return {
    id,
    kind: shown.kind,
    status: "pending",
    progress: { total: shown.itemCount, dispatched: 0, done: 0, failed: 0, skipped: 0 },
    aggregate: undefined,
    failures: [],
    createdAt: new Date(shown.createdAtMs).toISOString(),
    completedAt: undefined,
    deadline: isoTime(shown.deadlineAtMs),
    ...(spec.ok ? scheduleView(spec.value) : {}),
    ...((await isCancelRequested(system, id, options)) ? { cancelRequested: true as const } : {}),
    lastEpoch: undefined,
    ...(spec.ok ? {} : { notice: `${spec.reason}; a leader of that version registers the job` }),
  };
}

function isoTime(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}
