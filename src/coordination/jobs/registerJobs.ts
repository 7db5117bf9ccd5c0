import { ConcurrentUpdateError } from "../../library/errors.js";
import { Bitmap } from "../state/bitmap.js";
import type { CoordinationDeps } from "../deps.js";
import { JOB_FORMAT_VERSION, formatVersion, jobSpecSchema, keys, type JobState } from "../state/jobState.js";
import type { JobStore } from "../state/jobStore.js";
import { unitItemsFor } from "./unitSize.js";
import type { Abortable } from "../../library/util/delay.js";

/** Most new jobs taken from the inbox per pass. */
const INBOX_BATCH = 50;

/**
 * Most jobs active at once: more wait in the inbox (`pending`) until others end. Bounds the job index (its active
 * list), which every pass reads, and the leader's round of the active jobs (see `MAX_JOBS_PER_PASS`).
 */
export const MAX_ACTIVE_JOBS = 1000;

/** Options of {@link registerJobs}. */
export interface RegisterOptions extends Abortable {
  /** True once the step's budget is spent: no more jobs are taken (at least one is, so registration goes on). */
  pastBudget?: () => boolean;
}

/**
 * Moves submitted jobs from the inbox into the leader's fenced state: creates each job's state (create-if-absent, so
 * a replay after a crash changes nothing), adds it to the index, then removes the inbox marker. Returns how many.
 * Takes none while {@link MAX_ACTIVE_JOBS} are active, and stops once the step's budget is spent.
 */
export async function registerJobs(
  deps: CoordinationDeps,
  jobs: JobStore,
  epoch: number,
  options: RegisterOptions,
): Promise<number> {
  const listed = await deps.system.list(keys.inboxPrefix, INBOX_BATCH, options);
  if (listed.length === 0) return 0;
  const room = MAX_ACTIVE_JOBS - ((await jobs.readIndex(options))?.value.active.length ?? 0);
  if (room <= 0) {
    deps.logger.verbose(`${MAX_ACTIVE_JOBS} jobs are active; submitted jobs wait in the inbox until some end.`, {
      instanceId: deps.instanceId,
      epoch,
    });
    return 0;
  }
  const markers = listed.slice(0, room);
  const registered: string[] = [];
  for (const [taken, marker] of markers.entries()) {
    if (taken > 0 && options.pastBudget?.() === true) break;
    const id = marker.slice(keys.inboxPrefix.length);
    const specText = await deps.system.readText(keys.spec(id), options);
    const json = specText === undefined ? undefined : safeJson(specText);
    const version = formatVersion(json);
    if (version !== undefined && version > JOB_FORMAT_VERSION) {
      // Written by a newer version during a rolling deploy: left in the inbox for a leader that can read it.
      deps.logger.verbose(`Job ${id} has a spec of format version ${version}; leaving it for a newer leader.`, {
        instanceId: deps.instanceId,
        epoch,
      });
      continue;
    }
    const spec = specText === undefined ? undefined : jobSpecSchema.safeParse(json);
    if (spec === undefined || !spec.success) {
      deps.logger.warn(`Inbox marker ${marker} has no valid job spec; dropping it.`, {
        instanceId: deps.instanceId,
        epoch,
      });
      await deps.system.delete(marker, options);
      continue;
    }
    const { data } = spec;
    const state: JobState = {
      v: 1,
      id: data.id,
      kind: data.kind,
      params: data.params,
      itemCount: data.itemCount,
      chunkSize: data.chunkSize,
      ...(data.chunkChars !== undefined ? { chunkChars: data.chunkChars } : {}),
      createdAtMs: data.createdAtMs,
      ...(data.deadlineAtMs !== undefined ? { deadlineAtMs: data.deadlineAtMs } : {}),
      ...(data.limits !== undefined ? { limits: data.limits } : {}),
      ...(data.kindLimits !== undefined ? { kindLimits: data.kindLimits } : {}),
      registeredAtMs: deps.now(),
      status: "running",
      unitMaxItems: unitItemsFor(deps, data),
      unitMaxBytes: deps.workUnitMaxBytes,
      dispatched: 0,
      doneBits: Bitmap.empty(data.itemCount).toBase64(),
      failedBits: Bitmap.empty(data.itemCount).toBase64(),
      doneCount: 0,
      failedCount: 0,
      // null: a leader without this kind cannot know its empty aggregate; the first fold with the kind starts from it.
      aggregate: deps.registry.get(data.kind)?.empty() ?? null,
      failures: [],
      lastEpoch: epoch,
    };
    try {
      await jobs.writeJob(state, undefined, options);
    } catch (error) {
      // Already registered (a replay after a crash between this write and the marker's removal): keep what is there.
      if (!(error instanceof ConcurrentUpdateError)) throw error;
    }
    registered.push(id);
  }
  if (registered.length === 0) return 0;
  await jobs.updateIndex({ add: registered }, options);
  // The markers go at once, not one after another: a pass that registered 50 jobs is not 50 round trips longer.
  await Promise.all(registered.map((id) => deps.system.delete(keys.inbox(id), options)));
  for (const id of registered)
    deps.emit({ type: "job-registered", instanceId: deps.instanceId, atMs: deps.now(), epoch, jobId: id });
  return registered.length;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
