import { ConcurrentUpdateError } from "../../library/errors.js";
import { Bitmap } from "../state/bitmap.js";
import type { CoordinationDeps } from "../deps.js";
import {
  JOB_FORMAT_VERSION,
  formatVersion,
  jobSpecSchema,
  keys,
  type JobSpec,
  type JobState,
} from "../state/jobState.js";
import { scheduleEntryFor, storedScheduleOf, type ScheduleEntry, type StoredSchedule } from "../state/jobSchedule.js";
import { claimNames } from "./idempotency.js";
import type { JobStore } from "../state/jobStore.js";
import { MARKERS_LISTED, takeInTurn, type MarkerTurn } from "./markerTurn.js";
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
  /** Where the step's passes are in the inbox (`markerTurn.ts`); updated. @default a step's first pass */
  turn?: MarkerTurn;
}

/**
 * Moves submitted jobs from the inbox into the leader's fenced state: creates each job's state (create-if-absent, so
 * a replay after a crash changes nothing), adds it to the index with its scheduling entry, then removes the inbox
 * marker. Returns how many. Takes none while {@link MAX_ACTIVE_JOBS} are active, and stops once the step's budget is
 * spent. A marker of a job registered already (a replay, or a keyed submission's retry that wrote it again) changes
 * nothing of that job: a running one stays on the active list, an ended one is not put back on it. Takes the markers
 * in turn (`markerTurn.ts`): a newer version's jobs, left in the inbox, never hold up the others (issue 43).
 */
export async function registerJobs(
  deps: CoordinationDeps,
  jobs: JobStore,
  epoch: number,
  options: RegisterOptions,
): Promise<number> {
  const listed = await deps.system.list(keys.inboxPrefix, MARKERS_LISTED, options);
  if (listed.length === 0) return 0;
  const turn = options.turn ?? { after: undefined };
  const index = await jobs.readIndex(options);
  const room = MAX_ACTIVE_JOBS - (index?.value.active.length ?? 0);
  if (room <= 0) {
    deps.logger.verbose(`${MAX_ACTIVE_JOBS} jobs are active; submitted jobs wait in the inbox until some end.`, {
      instanceId: deps.instanceId,
      epoch,
    });
    return 0;
  }
  const markers = takeInTurn(listed, Math.min(INBOX_BATCH, room), turn, epoch);
  const active = new Set(index?.value.active ?? []);
  const registered: string[] = [];
  const schedule: Record<string, ScheduleEntry> = {};
  const dropped: string[] = [];
  for (const [taken, marker] of markers.entries()) {
    if (taken > 0 && options.pastBudget?.() === true) break;
    turn.after = marker;
    const id = marker.slice(keys.inboxPrefix.length);
    const outcome = await registerOne(deps, jobs, epoch, id, options);
    if (outcome === "left") continue;
    if (outcome === "dropped") {
      await deps.system.delete(marker, options);
      continue;
    }
    if (outcome === "ended") {
      dropped.push(id);
      continue;
    }
    registered.push(id);
    const entry = scheduleEntryFor(outcome.schedule);
    if (entry !== undefined) schedule[id] = entry;
  }
  if (registered.length > 0) await jobs.updateIndex({ add: registered, schedule }, options);
  // The markers go at once, not one after another: a pass that registered 50 jobs is not 50 round trips longer.
  await Promise.all([...registered, ...dropped].map((id) => deps.system.delete(keys.inbox(id), options)));
  const added = registered.filter((id) => !active.has(id));
  for (const id of added)
    deps.emit({ type: "job-registered", instanceId: deps.instanceId, atMs: deps.now(), epoch, jobId: id });
  return added.length;
}

/**
 * One inbox marker: `left` for a leader of a newer version, `dropped` (no usable spec, or a keyed job its claim no
 * longer names), `ended` (registered before, and ended since), or the job registered (now or before) with its schedule.
 */
async function registerOne(
  deps: CoordinationDeps,
  jobs: JobStore,
  epoch: number,
  id: string,
  options: Abortable,
): Promise<"left" | "dropped" | "ended" | { schedule: StoredSchedule }> {
  const log = { instanceId: deps.instanceId, epoch };
  const specText = await deps.system.readText(keys.spec(id), options);
  const json = specText === undefined ? undefined : safeJson(specText);
  const version = formatVersion(json);
  if (version !== undefined && version > JOB_FORMAT_VERSION) {
    // Written by a newer version during a rolling deploy: left in the inbox for a leader that can read it.
    deps.logger.verbose(`Job ${id} has a spec of format version ${version}; leaving it for a newer leader.`, log);
    return "left";
  }
  const spec = specText === undefined ? undefined : jobSpecSchema.safeParse(json);
  if (spec === undefined || !spec.success) {
    deps.logger.warn(`Inbox marker ${keys.inbox(id)} has no valid job spec; dropping it.`, log);
    return "dropped";
  }
  const { data } = spec;
  if (data.idempotencyKey !== undefined && !(await claimNames(deps.system, data.idempotencyKey, id, options))) {
    // Its claim was removed (the job's retention had begun) or names another job: this spec is a stale copy.
    deps.logger.warn(`Job ${id}: its idempotency key's claim does not name it; dropping its inbox marker.`, log);
    return "dropped";
  }
  try {
    await jobs.writeJob(newJobState(deps, data, epoch), undefined, options);
  } catch (error) {
    if (!(error instanceof ConcurrentUpdateError)) throw error;
    // Registered before: a replay after a crash between this write and the marker's removal keeps the job as it is
    // (running: on the active list); a job that has ended since stays off it.
    const current = await jobs.readJob(id, options);
    if (current !== undefined && current.value.status !== "running") return "ended";
  }
  return { schedule: data };
}

/** A new job's state, from its spec. */
function newJobState(deps: CoordinationDeps, data: JobSpec, epoch: number): JobState {
  return {
    v: data.v,
    id: data.id,
    kind: data.kind,
    params: data.params,
    itemCount: data.itemCount,
    chunkSize: data.chunkSize,
    ...(data.chunkChars !== undefined ? { chunkChars: data.chunkChars } : {}),
    createdAtMs: data.createdAtMs,
    ...(data.deadlineAtMs !== undefined ? { deadlineAtMs: data.deadlineAtMs } : {}),
    ...storedScheduleOf(data),
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
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
