import { hostname } from "node:os";
import { readSettings, CONNECTION_SETTINGS, poisonQueueOf, type Settings } from "./settings.js";
import type { ChunkCacheOptions, CoordinationPorts } from "../coordination/deps.js";
import type { MessageQueue } from "../coordination/ports/ports.js";
import { TaskRegistry } from "../coordination/kinds/taskRegistry.js";
import { epochOptions } from "../coordination/state/termHistory.js";
import { ActivityWakeUps } from "../coordination/wake/wake.js";
import { LeaderWatch } from "../coordination/wake/leaderWatch.js";
import { JobStopChecks } from "../coordination/state/jobStops.js";
import { BlobStateStore } from "../azure/BlobStateStore.js";
import { BlobLeaseStore } from "../azure/BlobLeaseStore.js";
import type { LeaseStore } from "../library/lease/LeaseStore.js";
import { LeaderElector } from "../library/leadership/LeaderElector.js";
import type { LeaderElectorOptions } from "../library/leadership/options.js";
import type { Abortable } from "../library/util/delay.js";
import { BlobFilesStore, ReadOnlyBlobFiles } from "../azure/BlobFilesStore.js";
import {
  connectionFromSettings,
  createStorageClients,
  type CredentialOptions,
  DEFAULT_PIPELINE_OPTIONS,
  type StorageClientOptions,
} from "../azure/clients.js";
import { StorageQueue } from "../azure/StorageQueue.js";
import type { Logger } from "../library/util/logger.js";
import type { AppEvent } from "./events.js";

/**
 * host.json `extensions.queues.maxDequeueCount`. The worker needs it to know a delivery is the last; a test proves
 * host.json says the same.
 */
export const MAX_DEQUEUE_COUNT = 5;

/** Where an invocation's logs and events go (the Functions adapter points it at `InvocationContext`). */
export interface Sink {
  logger: Logger;
  emit: (event: AppEvent) => void;
}

/**
 * Everything the app's handlers share within one process. Holds no state another instance needs, and nothing of one
 * invocation: each operation takes its invocation's {@link Sink}.
 */
export interface CoordinatorApp extends AppParts {
  /**
   * One elector per process: it never runs two terms at once. Each attempt logs to the sink of the call that made it.
   */
  elector: LeaderElector;
  /** This process's wake-ups from queue activity and their follow-ups (throttled per process). */
  activityWakeUps: ActivityWakeUps;
  /** With takeover: watches the leader while this process is busy, and breaks a silent one's lease. */
  leaderWatch: LeaderWatch;
  /** This process's checks of jobs' stop blobs (worker invocations share them). */
  jobStops: Pick<JobStopChecks, "isStopped">;
  /** Internal, not a setting: the leader's chunk cache scaled and watched (the simulator; `coordination/deps.ts`). */
  chunkCache?: ChunkCacheOptions;
  /** Internal, not a setting: how long held items wait, in ms (the simulator scales it; `coordination/deps.ts`). */
  inferredFailureHoldMs?: number;
}

/** What {@link instanceIdFrom} reads of the process (tests and the local runner pass another process's). */
export interface ProcessIdentity {
  /** @default process.pid */
  pid?: number;
  /** @default os.hostname() */
  hostname?: string;
}

/**
 * This process's instance id: `[region:]platform-pid`. The platform id (WEBSITE_INSTANCE_ID, set by Azure and by the
 * local runner) names the machine, not the process: with FUNCTIONS_WORKER_PROCESS_COUNT > 1, and while a restarted
 * worker overlaps the old one, several processes share it, so the process id is always appended. Without a platform
 * id the host name stands in. The result stays readable in logs and in the lease record's `holder`.
 */
export function instanceIdFrom(env: Record<string, string | undefined>, identity: ProcessIdentity = {}): string {
  const pid = identity.pid ?? process.pid;
  const platform = env.WEBSITE_INSTANCE_ID?.replace(/[^\w.:@-]/g, "").slice(0, 24);
  const region = env.REGION_NAME?.replace(/[^\w-]/g, "").slice(0, 24);
  const machine =
    platform !== undefined && platform !== ""
      ? platform
      : (identity.hostname ?? hostname()).replace(/[^\w.-]/g, "").slice(0, 40);
  const base = `${machine}-${pid}`;
  return region ? `${region}:${base}` : base;
}

/** What an app is built from: its settings, its identity and its storage ports (Azure's, or fakes in unit tests). */
export interface AppParts extends CoordinationPorts {
  settings: Settings;
  instanceId: string;
  leaseStore: LeaseStore;
  /** WAKE_QUEUE: wake-ups that ask for a step now (see `src/coordination/wake/wake.ts`). */
  wakeQueue: MessageQueue;
}

/**
 * Builds the app from settings (by default `process.env`): validates every setting, connects to the coordination
 * storage account (connection string locally, managed identity in Azure), and wires the ports. `options.policies`:
 * request policies for its storage clients (a tool's instrumentation; by default the process's); `abortSignal`: the
 * process's shutdown, which stops its leader watcher.
 *
 * @throws ConfigurationError naming each bad setting.
 */
export function createCoordinatorApp(
  env: Record<string, string | undefined> = process.env,
  options: AppBuildOptions,
): CoordinatorApp {
  const settings = readSettings(env);
  const { registry, connection = CONNECTION_SETTINGS.coordination, policies, abortSignal } = options;
  const clients = createStorageClients(connectionFromSettings(connection, env, options), {
    ...DEFAULT_PIPELINE_OPTIONS,
    ...(policies === undefined ? {} : { policies }),
  });
  const queue = (name: string): MessageQueue => new StorageQueue(clients.queue.getQueueClient(name));
  return assembleCoordinatorApp(
    {
      settings,
      instanceId: instanceIdFrom(env),
      leaseStore: new BlobLeaseStore(clients.blob, {
        containerName: settings.LEASE_CONTAINER,
        blobName: settings.LEASE_BLOB,
      }),
      state: new BlobStateStore(clients.blob, settings.STATE_CONTAINER),
      system: new BlobFilesStore(clients.blob.getContainerClient(settings.SYSTEM_CONTAINER)),
      inputs: new ReadOnlyBlobFiles(clients.blob.getContainerClient(settings.INPUT_CONTAINER)),
      workQueue: queue(settings.WORK_QUEUE),
      resultsQueue: queue(settings.RESULTS_QUEUE),
      workPoisonQueue: queue(poisonQueueOf(settings.WORK_QUEUE)),
      resultsPoisonQueue: queue(poisonQueueOf(settings.RESULTS_QUEUE)),
      wakeQueue: queue(settings.WAKE_QUEUE),
      registry,
    },
    { abortSignal },
  );
}

/** Options of {@link createCoordinatorApp}. */
export interface AppBuildOptions extends Pick<StorageClientOptions, "policies">, CredentialOptions, Abortable {
  /** The task kinds (the app's wiring knows none of its own). */
  registry: TaskRegistry;
  /**
   * The coordination storage account's connection: the name of an app setting holding a connection string (local,
   * Azurite), or the prefix of identity-based settings (`<name>__blobServiceUri`, …). @default "COORDINATION_STORAGE"
   */
  connection?: string;
}

/** The elector's timings and takeover from the app's settings (the app's defaults; docs/explanation/failover.md). */
export function electorTimings(
  settings: Settings,
): Pick<
  LeaderElectorOptions,
  | "leaseDurationS"
  | "renewIntervalMs"
  | "renewDeadlineMs"
  | "stallTimeoutMs"
  | "takeover"
  | "heartbeatIntervalMs"
  | "takeoverDeadlineMs"
> {
  const takeover = settings.LEASE_TAKEOVER_DEADLINE_MS > 0;
  return {
    leaseDurationS: settings.LEASE_DURATION_SECONDS,
    renewIntervalMs: settings.LEASE_RENEW_INTERVAL_MS,
    renewDeadlineMs: settings.LEASE_RENEW_DEADLINE_MS,
    stallTimeoutMs: settings.STEP_STALL_TIMEOUT_MS,
    takeover,
    ...(takeover
      ? {
          heartbeatIntervalMs: settings.LEASE_HEARTBEAT_INTERVAL_MS,
          takeoverDeadlineMs: settings.LEASE_TAKEOVER_DEADLINE_MS,
        }
      : {}),
  };
}

/**
 * Wires an app from its parts: one elector for the process. It has no logger or event listener of its own: every
 * attempt passes the sink of the invocation that made it (see `runCoordinatorTick`). `abortSignal`: the process's
 * shutdown, which stops the leader watcher.
 */
export function assembleCoordinatorApp(parts: AppParts, options: Abortable = {}): CoordinatorApp {
  const { settings, instanceId, leaseStore, state } = parts;
  const elector = new LeaderElector({
    store: leaseStore,
    instanceId,
    ...electorTimings(settings),
    // Epochs stay above every stored one even if the lease blob (and its epoch counter) is lost, and unique.
    ...epochOptions(state),
  });
  // Follow-ups look again every interval for three lease durations: a dead holder's lease has run out by then.
  const intervalMs = settings.ACTIVITY_WAKE_INTERVAL_MS;
  const maxFollowUps =
    intervalMs === 0 ? 0 : Math.ceil((3 * settings.LEASE_DURATION_SECONDS * 1000) / Math.max(1000, intervalMs));
  const activityWakeUps = new ActivityWakeUps(parts.wakeQueue, { intervalMs, maxFollowUps, from: instanceId });
  // The watcher covers the same three lease durations after this process's last invocation as the follow-ups do.
  const leaderWatch = new LeaderWatch(elector, parts.wakeQueue, {
    intervalMs: settings.LEASE_TAKEOVER_DEADLINE_MS > 0 ? settings.LEADER_WATCH_INTERVAL_MS : 0,
    windowMs: 3 * settings.LEASE_DURATION_SECONDS * 1000,
    from: instanceId,
    abortSignal: options.abortSignal,
  });
  return { ...parts, elector, activityWakeUps, leaderWatch, jobStops: new JobStopChecks(parts.system) };
}
