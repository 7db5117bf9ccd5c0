import type { StateStore } from "../fencing/StateStore";
import { jobSpecSchema, jobStateSchema, keys, type ItemFailure } from "./jobState";
import type { BlobFiles, PortOptions } from "./ports";
import type { TaskRegistry } from "./taskKinds";

/** A job's progress as users read it. */
export interface JobStatus {
  id: string;
  kind: string;
  /** `pending`: submitted, not yet picked up by a leader; `failed`: the job could not go on (see `failureReason`). */
  status: "pending" | "running" | "completed" | "failed";
  /** Why a failed job stopped (e.g. its aggregate would exceed MAX_AGGREGATE_GROUPS). */
  failureReason?: string;
  progress: { total: number; dispatched: number; done: number; failed: number };
  /** The aggregate so far (final once completed), in the kind's view. */
  aggregate: unknown;
  /** Failed items with reasons (the first ones, up to a bound); `progress.failed` counts all. */
  failures: ItemFailure[];
  createdAt: string;
  completedAt: string | undefined;
  /** Epoch of the leader that last changed the job. */
  lastEpoch: number | undefined;
}

/** Reads a job's status without the lease (any instance may). Undefined when no such job exists. */
export async function readJobStatus(state: StateStore, system: BlobFiles, registry: TaskRegistry, id: string, options: PortOptions = {}): Promise<JobStatus | undefined> {
  if (!/^[a-z0-9-]{1,63}$/.test(id)) return undefined;
  const stored = await state.read(keys.jobState(id), options);
  if (stored !== undefined) {
    const job = jobStateSchema.parse(stored.value);
    const kind = registry.get(job.kind);
    const partial = kind?.partialSchema.safeParse(job.aggregate);
    const aggregate = kind !== undefined && partial?.success ? (kind.view ? kind.view(partial.data) : partial.data) : job.aggregate;
    return {
      id,
      kind: job.kind,
      status: job.status,
      ...(job.failureReason === undefined ? {} : { failureReason: job.failureReason }),
      progress: { total: job.itemCount, dispatched: job.dispatched, done: job.doneCount, failed: job.failedCount },
      aggregate,
      failures: job.failures,
      createdAt: new Date(job.createdAtMs).toISOString(),
      completedAt: job.completedAtMs === undefined ? undefined : new Date(job.completedAtMs).toISOString(),
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
    progress: { total: spec.itemCount, dispatched: 0, done: 0, failed: 0 },
    aggregate: undefined,
    failures: [],
    createdAt: new Date(spec.createdAtMs).toISOString(),
    completedAt: undefined,
    lastEpoch: undefined,
  };
}
