import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Abortable, JobStatus } from "azure-leader-coordinator";
import {
  ConfigurationError,
  delay,
  hasEnded,
  JobsHttpApi,
  type AppEvent,
  type AppEventType,
} from "azure-leader-coordinator/internal";
import { startAzurite, type Azurite } from "../local/azurite.js";
import { InstanceProcess, lastOutput, type InstanceHandlers } from "../local/instances.js";
import { jobsBaseUrl } from "../local/instanceUrls.js";
import { instanceEnv, waitForReady } from "../local/startup.js";
import { ensureAppStorage } from "../local/storageSetup.js";

/**
 * A cluster of the user's own Function app for their tests (vitest, jest): Azurite (a dependency of this package),
 * N instances of the app on the local Functions host — each its own OS process, as in Azure — and the means to submit
 * jobs, wait for the events and statuses a test needs, kill the leader or a worker, and stop everything. Modelled on
 * Apache Curator's `TestingCluster`.
 */

/** Options of {@link startTestCluster}. */
export interface TestClusterOptions extends Abortable {
  /** The app's entry file: its compiled JavaScript (e.g. `dist/index.js`; TypeScript only with tsx installed). */
  appEntry: string;
  /** The host.json the instances read. @default `<projectDir>/host.json` when there is one */
  hostJsonPath?: string;
  /** Instance processes, 1–16. @default 3 */
  instances?: number;
  /** App settings on top of `process.env` (`WORK_UNIT_MAX_ITEMS`, your own). */
  env?: Record<string, string | undefined>;
  /** COORDINATOR_SCHEDULE. @default "*\/5 * * * * *" */
  schedule?: string;
  /** The app's project: where Azurite and tsx are resolved from. @default the current directory */
  projectDir?: string;
  /**
   * How long to wait for Azurite to listen, and then for every instance to be ready (each wait on its own), in ms.
   * @default 60000
   */
  startTimeoutMs?: number;
}

/** An event of an instance: the app's event (`type`, `instanceId`, `atMs`, …) and the instance's name. */
export type ClusterEvent = AppEvent & { readonly instance: string };

/** An instance of a {@link TestCluster}. */
export interface TestInstance {
  /** `instance-1`, … */
  readonly name: string;
  /** The app's id for the process, as in its events. */
  readonly instanceId: string;
  /** Its process id (undefined when its process could not be spawned). */
  readonly pid: number | undefined;
  /** True until it exited or was killed. */
  readonly alive: boolean;
  /** "leader" while it holds a term. */
  readonly role: "starting" | "follower" | "leader" | "dead";
  /** The latest epoch it led or saw; undefined before its first. */
  readonly epoch: number | undefined;
}

/** Options of the waits: a deadline and a signal. */
export interface ClusterWaitOptions extends Abortable {
  /** Give up after this many ms. @default 120000 */
  timeoutMs?: number;
}

/** A running cluster. Stop it with {@link TestCluster.stop} (or `await using`). */
export interface TestCluster extends AsyncDisposable {
  /** The storage the instances use (Azurite's connection string). */
  readonly connectionString: string;
  /** Its instances, in start order (`instance-1` first), the dead ones included. */
  readonly instances: readonly TestInstance[];
  /** Every event of every instance so far, in arrival order. */
  readonly events: readonly ClusterEvent[];
  /** Submits a job through the app's HTTP route. @throws Error naming each field the app refused. */
  submitJob(body: unknown, options?: Abortable): Promise<{ id: string; itemCount: number }>;
  /** The job's status through the app's route; undefined for no such job. */
  getJob(id: string, options?: Abortable): Promise<JobStatus | undefined>;
  /**
   * Reads the job's status (every 200 ms) until `until` holds — by default, until the job has ended.
   * @throws Error after the timeout, with the last status.
   */
  waitForJob(id: string, options?: ClusterWaitOptions & { until?: (status: JobStatus) => boolean }): Promise<JobStatus>;
  /**
   * The first event of `type` (among those already received, then those to come) that `match` accepts.
   * @throws Error after the timeout.
   */
  waitForEvent<T extends AppEventType>(
    type: T,
    match?: (event: Extract<ClusterEvent, { type: T }>) => boolean,
    options?: ClusterWaitOptions,
  ): Promise<Extract<ClusterEvent, { type: T }>>;
  /**
   * SIGKILLs the leader: the instance holding a term now or, if none does, the next one to acquire the lease (a
   * leader holds its term only while it runs a step). Resolves with the instance killed.
   */
  killLeader(options?: ClusterWaitOptions): Promise<TestInstance>;
  /** SIGKILLs an instance by name (a worker, say). */
  kill(name: string): TestInstance;
  /** Stops every instance gracefully (SIGTERM, then SIGKILL), then Azurite. */
  stop(): Promise<void>;
}

const DEFAULT_TIMEOUT_MS = 120_000;
const INSTANCE_STOP_TIMEOUT_MS = 35_000;

/**
 * Starts Azurite and `instances` instances of the app, creates the app's containers and queues, and resolves once
 * every instance serves HTTP.
 *
 * @throws ConfigurationError when the entry is missing, Azurite is not installed, or a setting is bad; Error when an
 *   instance exits while starting (with its last output).
 */
export async function startTestCluster(options: TestClusterOptions): Promise<TestCluster> {
  const projectDir = resolve(options.projectDir ?? process.cwd());
  const count = options.instances ?? 3;
  if (!Number.isInteger(count) || count < 1 || count > 16)
    throw new ConfigurationError(`instances is ${count}; a test cluster has a whole number from 1 to 16.`);
  const appEntry = resolve(projectDir, options.appEntry);
  if (!existsSync(appEntry))
    throw new ConfigurationError(`appEntry ${appEntry} does not exist: build your app before its tests.`);
  const hostJson = options.hostJsonPath ?? join(projectDir, "host.json");
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const azurite = await startAzurite({ projectDir, startTimeoutMs });
  const cluster = new Cluster(azurite);
  try {
    const { env, settings } = instanceEnv(
      { ...process.env, COORDINATION_STORAGE: undefined, ...options.env },
      azurite.connectionString,
      options.schedule ?? "*/5 * * * * *",
      // A killed holder's timer lock is taken over within seconds, not the host's minute.
      { listenerLockPeriodS: 15, listenerLockRecoveryS: 1 },
    );
    await ensureAppStorage(azurite.connectionString, settings);
    const instanceSettings = {
      ...env,
      LOCAL_APP_ENTRY: appEntry,
      LOCAL_HOST_JSON: existsSync(hostJson) ? resolve(hostJson) : "",
      LOCAL_PROJECT_DIR: projectDir,
    };
    for (let index = 1; index <= count; index++) cluster.start(`instance-${index}`, instanceSettings);
    await waitForReady(cluster.processes, options.abortSignal, startTimeoutMs);
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

/** The {@link TestCluster}: the instance processes, their events, and the app's routes on them. */
class Cluster implements TestCluster {
  readonly processes: InstanceProcess[] = [];
  readonly events: ClusterEvent[] = [];
  private readonly listeners = new Set<(event: ClusterEvent) => void>();
  private readonly api = new JobsHttpApi(() => {
    const serving = this.processes.find((instance) => instance.alive && instance.state.httpPort !== undefined);
    return serving?.state.httpPort === undefined
      ? undefined
      : jobsBaseUrl(serving.state.httpPort, serving.state.httpRoutes ?? []);
  });
  private stopped: Promise<void> | undefined;

  constructor(private readonly azurite: Azurite) {}

  get connectionString(): string {
    return this.azurite.connectionString;
  }

  get instances(): TestInstance[] {
    return this.processes.map(viewOf);
  }

  start(name: string, env: Record<string, string | undefined>): void {
    const handlers: InstanceHandlers = {
      onEvent: (instance, line) => {
        // The app's event as it logged it, without the protocol's fields (kind, pid), with the instance's name.
        const fields = Object.entries(line).filter(([key]) => key !== "kind" && key !== "pid");
        const received = { ...Object.fromEntries(fields), instance: instance.name } as ClusterEvent;
        this.events.push(received);
        for (const listener of [...this.listeners]) listener(received);
      },
      onLog: () => undefined,
      onReady: () => undefined,
      onExit: () => undefined,
    };
    this.processes.push(new InstanceProcess(name, env, handlers));
  }

  async submitJob(body: unknown, options: Abortable = {}): Promise<{ id: string; itemCount: number }> {
    const result = await this.api.submit(body, options);
    if (!result.ok)
      throw new Error(
        `The app refused the job (HTTP ${result.httpStatus}): ${result.error}${result.errors.map((error) => `\n  ${error.field}: ${error.message}`).join("")}`,
      );
    return { id: result.id, itemCount: result.itemCount };
  }

  getJob(id: string, options: Abortable = {}): Promise<JobStatus | undefined> {
    return this.api.getJob(id, options);
  }

  async waitForJob(
    id: string,
    options: ClusterWaitOptions & { until?: (status: JobStatus) => boolean } = {},
  ): Promise<JobStatus> {
    const until = options.until ?? ((status: JobStatus) => hasEnded(status.status));
    const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    let last: JobStatus | undefined;
    for (;;) {
      last = (await this.api.getJob(id, options).catch(() => undefined)) ?? last;
      if (last !== undefined && until(last)) return last;
      if (Date.now() > deadline)
        throw new Error(`Job ${id}: the awaited status did not come in time; last status ${JSON.stringify(last)}.`);
      if (this.processes.every((instance) => !instance.alive)) throw new Error("Every instance of the cluster exited.");
      await delay(200, options);
    }
  }

  waitForEvent<T extends AppEventType>(
    type: T,
    match: (event: Extract<ClusterEvent, { type: T }>) => boolean = () => true,
    options: ClusterWaitOptions = {},
  ): Promise<Extract<ClusterEvent, { type: T }>> {
    const accepts = (event: ClusterEvent): event is Extract<ClusterEvent, { type: T }> =>
      event.type === type && match(event as Extract<ClusterEvent, { type: T }>);
    const seen = this.events.find(accepts);
    if (seen !== undefined) return Promise.resolve(seen);
    return this.nextEvent(accepts, `a "${type}" event`, options);
  }

  async killLeader(options: ClusterWaitOptions = {}): Promise<TestInstance> {
    const leader = this.processes.find((instance) => instance.alive && instance.state.role === "leader");
    if (leader !== undefined) {
      leader.kill();
      return viewOf(leader);
    }
    // Killed in the event handler itself, before the new leader's step can finish.
    const acquired = await this.nextEvent(
      (event): event is ClusterEvent => {
        if (event.type !== "lease-acquired") return false;
        const next = this.processes.find((instance) => instance.state.name === event.instance && instance.alive);
        next?.kill();
        return next !== undefined;
      },
      "a leader to kill",
      options,
    );
    const killed = this.processes.find((instance) => instance.state.name === acquired.instance);
    if (killed === undefined) throw new Error(`No instance ${acquired.instance}.`);
    return viewOf(killed);
  }

  kill(name: string): TestInstance {
    const instance = this.processes.find((candidate) => candidate.state.name === name);
    if (instance === undefined)
      throw new ConfigurationError(
        `No instance "${name}"; the cluster has ${this.processes.map((candidate) => candidate.state.name).join(", ")}.`,
      );
    instance.kill();
    return viewOf(instance);
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      await Promise.all(this.processes.map((instance) => instance.stop(INSTANCE_STOP_TIMEOUT_MS)));
      await this.azurite.stop();
    })();
    return this.stopped;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }

  /** The next event `accepts` takes, or an error after the timeout, on abort, or when every instance has exited. */
  private nextEvent<E extends ClusterEvent>(
    accepts: (event: ClusterEvent) => event is E,
    what: string,
    options: ClusterWaitOptions,
  ): Promise<E> {
    return new Promise<E>((resolvePromise, reject) => {
      const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const done = (): void => {
        clearTimeout(timer);
        this.listeners.delete(listener);
        options.abortSignal?.removeEventListener("abort", onAbort);
      };
      const listener = (event: ClusterEvent): void => {
        if (!accepts(event)) return;
        done();
        resolvePromise(event);
      };
      const onAbort = (): void => {
        done();
        reject(options.abortSignal?.reason instanceof Error ? options.abortSignal.reason : new Error("Aborted."));
      };
      const timer = setTimeout(() => {
        done();
        const last = this.processes.map((instance) => `${instance.state.name}:\n${lastOutput(instance.state)}`);
        reject(new Error(`No ${what} within ${timeoutMs} ms. The instances' last output:\n${last.join("\n")}`));
      }, timeoutMs);
      this.listeners.add(listener);
      options.abortSignal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

function viewOf(instance: InstanceProcess): TestInstance {
  const { name, instanceId, pid, role, epoch } = instance.state;
  return { name, instanceId, pid, alive: instance.alive, role, epoch };
}
