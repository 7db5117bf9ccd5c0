import type { Sink } from "../../src/app/context";
import { handleWakeMessage } from "../../src/app/operations";
import { readStatusView } from "../../src/app/statusView";
import { readJobStatus } from "../../src/coordination/jobs/status";
import type { Abortable } from "../../src/library/util/delay";
import { requestStepDown } from "../../src/library/leadership/leaderInfo";
import type { StoredState, StoredSummary } from "../../src/library/fencing/StateStore";
import type { ReceivedMessage } from "../../src/coordination/ports/ports";
import { silentLogger } from "../../src/library/util/logger";
import { simRegistry } from "./kinds";
import { SimProcess, sleep } from "./network";
import type { JobPlan } from "./plan";
import { SimFiles, SimLeaseStore, SimMessageQueue, SimStateStore, type PortContext } from "./ports";
import type { SimInstance, SimWorld } from "./world";

/**
 * The world's side of issue 21's models (`activity.ts`): the wake-up queue trigger, operators whose step-down requests
 * are slow, a status page refreshing, and a burst of small jobs. What they did is logged in {@link ActivityLog} for the
 * invariants (`activityInvariants.ts`).
 */

/** An operator's step-down request, as the invariants see it. */
export interface StepDownRecord {
  process: SimProcess;
  issuedMs: number;
  /** The epoch the request answered (HTTP 202 {revokedEpoch}); undefined while pending, or when nobody led (409). */
  acceptedEpoch: number | undefined;
  acceptedMs: number | undefined;
  /** The request failed (storage trouble): not accepted, nothing promised. */
  failed: boolean;
}

/** One refresh of the status page, as the invariants see it. */
export interface StatusReadRecord {
  startMs: number;
  endMs: number;
  /** Each job the page listed (active, pending, recent), with what it showed. */
  shown: { id: string; status: string; done: number; failed: number }[];
  /** Bytes of stored documents the refresh read (state and system blobs). */
  bytes: number;
  /** Job state documents it read whole. */
  jobDocuments: number;
  problems: string[];
}

/** What the activity did. */
export interface ActivityLog {
  stepDowns: StepDownRecord[];
  statusReads: StatusReadRecord[];
  /** Steps ended by a step-down (`lease-lost`, reason `revoked`). */
  revokedStops: { atMs: number; epoch: number }[];
  /** When a process's storage was impaired by a fault (outage, hang, slow): its steps may then overrun. */
  impairments: { process: SimProcess; fromMs: number; toMs: number }[];
  /** When an operator deleted the lease container, and with it any step-down request. */
  leaseDeletions: number[];
}

export function emptyActivityLog(): ActivityLog {
  return { stepDowns: [], statusReads: [], revokedStops: [], impairments: [], leaseDeletions: [] };
}

/** A state store that counts what one reader reads: bytes of JSON and of summaries, and job documents read whole. */
class CountingStateStore extends SimStateStore {
  bytes = 0;
  jobDocuments = 0;

  override async read(key: string, options: Abortable = {}): Promise<StoredState | undefined> {
    const stored = await super.read(key, options);
    if (stored !== undefined) {
      this.bytes += JSON.stringify(stored.value).length;
      if (/^jobs\/[^/]+\.json$/.test(key)) this.jobDocuments++;
    }
    return stored;
  }

  override async readSummary(key: string, options: Abortable = {}): Promise<StoredSummary | undefined> {
    const stored = await super.readSummary(key, options);
    this.bytes += Buffer.byteLength(stored?.summary ?? "");
    return stored;
  }
}

/** A files port that counts the bytes one reader reads. */
class CountingFiles extends SimFiles {
  bytes = 0;

  override async readText(name: string, options: Abortable = {}): Promise<string | undefined> {
    const text = await super.readText(name, options);
    this.bytes += text?.length ?? 0;
    return text;
  }
}

/** Schedules the activity of the world's plan: operators' step-downs, the status page, the burst of jobs. */
export function startActivity(world: SimWorld): void {
  const { activity } = world.plan;
  for (const [index, request] of activity.stepDowns.entries())
    world.at(request.atS * 1000, () => void stepDown(world, index, request.latencyMs));
  if (activity.statusReads) world.at(1000 + Math.round(world.random() * 4000), () => void readStatusLoop(world));
  const burst = activity.burst;
  if (burst !== null)
    world.at(burst.atS * 1000, () => {
      world.storageLatencyMs = burst.latencyMs;
      for (const instance of world.instances) instance.process.baseLatencyMs = burst.latencyMs;
      for (let n = 0; n < burst.jobs; n++) {
        const job: JobPlan = {
          atS: burst.atS,
          kind: "sim-sum",
          items: [{ t: "ok", key: "a", value: n }],
          deleteChunk: false,
          cancelAfterS: null,
          timeoutS: null,
        };
        void world.submit(BURST_JOB_INDEX + n, job);
      }
    });
}

/** Plan indexes of a burst's jobs (they name their blobs by it); the plan's own jobs are 0–2. */
export const BURST_JOB_INDEX = 1000;

/** How many jobs the plan submits, its burst's included. */
export function plannedJobCount(world: SimWorld): number {
  return world.plan.jobs.length + (world.plan.activity.burst?.jobs ?? 0);
}

function portsOf(world: SimWorld, process: SimProcess): PortContext {
  return { net: world.net, account: world.account, process };
}

/** One operator's step-down request (the step-down API's call), from a process whose every request is slow. */
async function stepDown(world: SimWorld, index: number, latencyMs: number): Promise<void> {
  const process = new SimProcess(`operator-${index}`, () => Date.now());
  process.latencyMs = latencyMs;
  world.operators.push(process);
  const record: StepDownRecord = {
    process,
    issuedMs: Date.now(),
    acceptedEpoch: undefined,
    acceptedMs: undefined,
    failed: false,
  };
  world.activityLog.stepDowns.push(record);
  try {
    record.acceptedEpoch = await requestStepDown(new SimLeaseStore(portsOf(world, process), world.containers.leases));
    record.acceptedMs = Date.now();
  } catch {
    record.failed = true; // storage trouble: the API answered 500, nothing was promised
  }
}

/** The status page, open in a browser: refreshes every 5 s (± 1 s); a job's status (GET /api/jobs/{id}) between. */
async function readStatusLoop(world: SimWorld): Promise<void> {
  const process = new SimProcess("status-page", () => Date.now());
  world.operators.push(process);
  const ctx = portsOf(world, process);
  const state = new CountingStateStore(ctx, world.containers.state);
  const system = new CountingFiles(ctx, world.containers.system);
  const registry = simRegistry();
  const sources = {
    leaseStore: new SimLeaseStore(ctx, world.containers.leases),
    state,
    system,
    registry,
    workPoisonQueue: new SimMessageQueue(ctx, "work-items-poison"),
    resultsPoisonQueue: new SimMessageQueue(ctx, "work-results-poison"),
  };
  while (!world.over) {
    state.bytes = 0;
    state.jobDocuments = 0;
    system.bytes = 0;
    const startMs = Date.now();
    const view = await readStatusView(sources, { nowMs: startMs });
    const { active, pending, recent } = view.jobs;
    world.activityLog.statusReads.push({
      startMs,
      endMs: Date.now(),
      shown: [...active, ...pending, ...recent].map((job) => ({
        id: job.id,
        status: job.status,
        done: job.done,
        failed: job.failed,
      })),
      bytes: state.bytes + system.bytes,
      jobDocuments: state.jobDocuments,
      problems: view.problems,
    });
    await sleep(2000 + Math.round(world.random() * 1000));
    const job = world.jobs[Math.floor(world.random() * world.jobs.length)];
    // GET /api/jobs/{id}: may find storage down.
    if (job !== undefined) await readJobStatus(state, system, registry, job.id).catch(() => undefined);
    await sleep(2000 + Math.round(world.random() * 1000));
  }
}

/**
 * A queue trigger's polling as the host runs it: receive a batch, hand each message to `deliver` (one after the
 * other, or with `together` all at once, the next batch once they all ended); on an empty queue back off from 100 ms,
 * doubling, up to maxPollingInterval (2 s), randomised. Stops when the process crashes.
 */
export async function pollLikeTheHost(
  world: SimWorld,
  process: SimProcess,
  receive: () => Promise<ReceivedMessage[]>,
  deliver: (message: ReceivedMessage) => Promise<void>,
  together = false,
): Promise<void> {
  let idleMs = 100;
  while (!process.crashed && !world.over) {
    let messages: ReceivedMessage[] = [];
    try {
      messages = await receive();
    } catch {
      // storage trouble: poll again
    }
    if (messages.length === 0) {
      await sleep(Math.round(idleMs * (0.8 + 0.4 * world.random())));
      idleMs = Math.min(idleMs * 2, 2000);
      continue;
    }
    idleMs = 100;
    if (together) await Promise.all(messages.map(deliver));
    else for (const message of messages) await deliver(message);
  }
}

/** The wake-up queue trigger of one instance (retried with visibility when its step fails, as the host does). */
export function runWakeTrigger(world: SimWorld, instance: SimInstance, queue: SimMessageQueue): Promise<void> {
  const { process } = instance;
  return pollLikeTheHost(
    world,
    process,
    () => queue.receive(4, 30),
    async (message) => {
      let epoch: number | undefined;
      const sink: Sink = {
        logger: silentLogger,
        emit: (event) => {
          if (event.type === "step-started") epoch = event.epoch;
          instance.sink.emit(event);
        },
      };
      try {
        await handleWakeMessage(instance.app, sink, message.text, { dequeueCount: message.dequeueCount });
        await queue.delete(message).catch(() => undefined);
      } catch (error) {
        world.history.tickErrors.push({ process: process.name, epoch, atMs: Date.now(), error });
        await queue.update(message, 5).catch(() => undefined);
      }
    },
  );
}
