import type { StateStore } from "../library/fencing/StateStore";
import { isCancelRequested } from "./cancel";
import { isJobId, jobSpecSchema, jobStateSchema, keys, type ItemFailure, type JobState } from "./jobState";
import type { BlobFiles } from "./ports";
import type { TaskRegistry } from "./taskKinds";
import type { Abortable } from "../library/util/delay";

/** A job's progress as users read it. */
export interface JobStatus {
  id: string;
  kind: string;
  /**
   * `pending`: submitted, not yet picked up by a leader. `completed`: every item done or failed. `failed`: the job
   * could not go on (see `failureReason`). `cancelled` (on request) and `expired` (deadline passed): stopped by the
   * leader early; items neither done nor failed then are `skipped`.
   */
  status: "pending" | JobState["status"];
  /** Why a failed job stopped (e.g. its aggregate would exceed MAX_AGGREGATE_GROUPS). */
  failureReason?: string;
  progress: { total: number; dispatched: number; done: number; failed: number; skipped: number };
  /** The aggregate so far (final once completed), in the kind's view. */
  aggregate: unknown;
  /** Failed items with reasons (the first ones, up to a bound); `progress.failed` counts all. */
  failures: ItemFailure[];
  createdAt: string;
  completedAt: string | undefined;
  /** When the job completed, was cancelled or expired; absent before. */
  endedAt?: string;
  /** The job's deadline; absent when it has none. */
  deadline?: string;
  /** Present while a cancellation is requested and the leader has not applied it yet (pending or running jobs). */
  cancelRequested?: true;
  /** Epoch of the leader that last changed the job. */
  lastEpoch: number | undefined;
}

/** Reads a job's status without the lease (any instance may). Undefined when no such job exists. */
export async function readJobStatus(
  state: StateStore,
  system: BlobFiles,
  registry: TaskRegistry,
  id: string,
  options: Abortable = {},
): Promise<JobStatus | undefined> {
  if (!isJobId(id)) return undefined;
  const stored = await state.read(keys.jobState(id), options);
  if (stored !== undefined) {
    const job = jobStateSchema.parse(stored.value);
    const kind = registry.get(job.kind);
    const partial = kind?.partialSchema.safeParse(job.aggregate);
    const aggregate =
      kind !== undefined && partial?.success ? (kind.view ? kind.view(partial.data) : partial.data) : job.aggregate;
    return {
      id,
      kind: job.kind,
      status: job.status,
      ...(job.failureReason === undefined ? {} : { failureReason: job.failureReason }),
      progress: {
        total: job.itemCount,
        dispatched: job.dispatched,
        done: job.doneCount,
        failed: job.failedCount,
        skipped: job.skippedCount ?? 0,
      },
      aggregate,
      failures: job.failures,
      createdAt: new Date(job.createdAtMs).toISOString(),
      completedAt: isoTime(job.completedAtMs),
      endedAt: isoTime(job.completedAtMs ?? job.endedAtMs),
      deadline: isoTime(job.deadlineAtMs),
      ...(job.status === "running" && (await isCancelRequested(system, id, options))
        ? { cancelRequested: true as const }
        : {}),
      lastEpoch: job.lastEpoch,
    };
  }
  const specText = await system.readText(keys.spec(id), options);
  if (specText === undefined) return undefined;
  const spec = jobSpecSchema.parse(JSON.parse(specText));
  return {
    id,
    kind: spec.kind,
    status: "pending",
    progress: { total: spec.itemCount, dispatched: 0, done: 0, failed: 0, skipped: 0 },
    aggregate: undefined,
    failures: [],
    createdAt: new Date(spec.createdAtMs).toISOString(),
    completedAt: undefined,
    deadline: isoTime(spec.deadlineAtMs),
    ...((await isCancelRequested(system, id, options)) ? { cancelRequested: true as const } : {}),
    lastEpoch: undefined,
  };
}

function isoTime(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}
