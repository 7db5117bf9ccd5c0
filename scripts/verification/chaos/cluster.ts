import { appendFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type AppBuildOptions, type CoordinatorApp } from "../../../src/app/context";
import { createRepoApp } from "../../support/repoKinds";
import { readSettings, type Settings } from "../../../src/app/settings";
import { delay } from "../../../src/library/util/delay";
import { startAzurite, type Azurite } from "../../../dev/src/local/azurite";
import { EventLog, recordFromEventLine, type EventRecord } from "../../../dev/src/local/eventLog";
import {
  InstanceProcess,
  lastOutput,
  type InstanceHandlers,
  type InstanceState,
} from "../../../dev/src/local/instances";
import { ensureAppStorage } from "../../../dev/src/local/storageSetup";
import { REPO_APP } from "../../support/repoApp";

/**
 * The real system a chaos scenario injects faults into: a persistent Azurite (so stopping it is an outage, not a
 * wipe) and instance processes of the app under the local host — the same pieces `npm run local` uses, but with
 * handles a scenario needs mid-run: which instance is in a step right now, which has a work unit in flight, and the
 * processes themselves (SIGKILL, SIGSTOP/SIGCONT). Every app event and every injected fault goes to one event log.
 */

/**
 * App settings of every chaos scenario: fast ticks, small dispatch batches and short steps, so jobs span many steps and
 * terms.
 */
export const CHAOS_APP_SETTINGS: Readonly<Record<string, string>> = {
  // Every 10 s: STEP_BUDGET_MS must be below the schedule's shortest interval (settings.ts), and a 6 s step leaves a
  // revocation or a kill time to land mid-step.
  COORDINATOR_SCHEDULE: "*/10 * * * * *",
  DISPATCH_BATCH_SIZE: "5",
  // Units of 8 items: a job spans many units, so duplicates and kills hit whole units mid-job. Not spread further (the
  // default spreads a job's in-flight window, 10 items here, over 16 units: units of 1) — the scenarios' pacing is per
  // unit of 8. Duplicate delivery and worker kill run with the app's default units instead (UNIT_DEFAULTS).
  WORK_UNIT_MAX_ITEMS: "8",
  WORK_UNIT_SPREAD: "1",
  STEP_BUDGET_MS: "6000",
  // A killed worker's messages come back after 10 s instead of the host's 10 min.
  LOCAL_MESSAGE_LEASE_SECONDS: "10",
};

/**
 * The app's own defaults for work units and dispatch, for the leaders of a scenario that must meet the units the app
 * makes (issue 24): a job of up to 16,384 items cut into 16 units, inline items as many as fit 45 KiB up
 * to 1,000 a unit, at most 32 when the job names blobs; the whole job dispatched in its first passes.
 */
export const UNIT_DEFAULTS: Readonly<Record<string, string>> = {
  DISPATCH_BATCH_SIZE: "8192",
  WORK_UNIT_MAX_ITEMS: "1000",
  WORK_UNIT_SPREAD: "16",
};

/** One instance process of the cluster. */
export interface ChaosInstance {
  /** The app's instance id (`name-pid`, `REGION:name-pid` when REGION_NAME is set), as in the events. */
  readonly id: string;
  readonly process: InstanceProcess;
  /** Worker invocations started and not yet finished (from the host's Executing/Executed lines). */
  readonly inFlight: Set<string>;
  frozen: boolean;
  /**
   * Whether its host holds its app's timer listener lock (from the host's log lines): it is the one firing the timer.
   */
  holdsTimerLock: boolean;
}

const EXECUTING = /^Executing 'Functions\.worker' .*Id=([\w-]+)\)$/;
const EXECUTED = /^Executed 'Functions\.worker' \(\w+, Id=([\w-]+)/;
/** The host's lines when the timer listener lock of the coordinator changes hands on an instance. */
const LOCK_ACQUIRED = /^Singleton lock acquired \(.*\.coordinator\.Listener\)/;
const LOCK_GONE = /^Singleton lock (released|lost) \(.*\.coordinator\.Listener\)/;
/**
 * The host's line when it moves an undecodable message to the poison queue (the reason is only in the log, as in
 * Azure).
 */
const UNDECODABLE = /^Message (\S+) could not be (?:decoded|bound): (.*) Moving message to queue/;

/** Azurite, the instance processes and the event log of one scenario. */
export class ChaosCluster {
  readonly instances: ChaosInstance[] = [];
  readonly settings: Settings;
  /** Messages the hosts moved to a poison queue undecoded, by message id, with the host's reason. */
  readonly undecodable = new Map<string, string>();
  private readonly handlers: InstanceHandlers;

  private constructor(
    readonly azurite: Azurite,
    readonly events: EventLog,
    readonly env: Record<string, string | undefined>,
    private readonly logsDir: string,
  ) {
    this.settings = readSettings(env);
    this.handlers = {
      onEvent: (state, line) => {
        this.events.append(recordFromEventLine(line));
      },
      onLog: (state, line) => {
        const instance = this.byState(state);
        const started = EXECUTING.exec(line.message)?.[1];
        const finished = EXECUTED.exec(line.message)?.[1];
        if (started !== undefined) instance?.inFlight.add(started);
        if (finished !== undefined) instance?.inFlight.delete(finished);
        if (instance !== undefined && LOCK_ACQUIRED.test(line.message)) instance.holdsTimerLock = true;
        if (instance !== undefined && LOCK_GONE.test(line.message)) instance.holdsTimerLock = false;
        const poisoned = UNDECODABLE.exec(line.message);
        if (poisoned?.[1] !== undefined) this.undecodable.set(poisoned[1], poisoned[2] ?? "");
        appendFileSync(
          join(this.logsDir, `${state.name}.log`),
          `${line.ts} ${line.level} ${line.functionName === undefined ? "" : `[${line.functionName}] `}${line.message}\n`,
        );
      },
      onReady: () => undefined,
      onExit: (state) => {
        const instance = this.byState(state);
        if (instance === undefined) return;
        instance.inFlight.clear();
        instance.holdsTimerLock = false;
        const exit = state.exit;
        this.note(instance.id, "instance-exited", {
          pid: state.pid,
          code: exit?.code ?? null,
          signal: exit?.signal ?? null,
          killedByRunner: exit?.killedByRunner ?? false,
        });
      },
    };
  }

  /** Starts a persistent Azurite and creates the app's containers and queues. */
  static async start(options: {
    eventsPath: string;
    logsDir: string;
    env?: Record<string, string>;
  }): Promise<ChaosCluster> {
    const azurite = await startAzurite({ persistent: true });
    // The coordination account doubles as host storage (AzureWebJobsStorage: the timer listener locks).
    const env: Record<string, string | undefined> = {
      ...process.env,
      ...CHAOS_APP_SETTINGS,
      ...options.env,
      COORDINATION_STORAGE: azurite.connectionString,
      AzureWebJobsStorage: azurite.connectionString,
    };
    const settings = readSettings(env);
    // Bindings name settings such as %WORK_QUEUE%; the defaults fill them in, as in run.ts.
    for (const [name, value] of Object.entries(settings))
      if ((env[name] ?? "").trim() === "") env[name] = String(value);
    await ensureAppStorage(azurite.connectionString, settings);
    mkdirSync(options.logsDir, { recursive: true });
    return new ChaosCluster(azurite, new EventLog(options.eventsPath), env, options.logsDir);
  }

  /** Every record so far, in arrival order. */
  get records(): readonly EventRecord[] {
    return this.events.records;
  }

  /**
   * Starts an instance process named `name` (its id gets the REGION_NAME prefix of `extraEnv`, if any). Its function
   * app is WEBSITE_SITE_NAME from `extraEnv` or the cluster's env; without one, the instance is an app of its own
   * (named `name`), so its timer fires whatever the others do — how separate apps sharing one coordination account
   * behave. Instances given the same app name share the host's timer listener lock: one of them fires the timer.
   */
  startInstance(name: string, extraEnv: Record<string, string> = {}): ChaosInstance {
    const env = { ...this.env, WEBSITE_SITE_NAME: this.env.WEBSITE_SITE_NAME ?? name, ...extraEnv };
    const child = new InstanceProcess(name, { ...REPO_APP, ...env }, this.handlers);
    const instance: ChaosInstance = {
      id: child.state.instanceId,
      process: child,
      inFlight: new Set(),
      frozen: false,
      holdsTimerLock: false,
    };
    this.instances.push(instance);
    this.note(instance.id, "instance-started", { pid: child.state.pid });
    return instance;
  }

  /** Waits until every given instance reported ready. @throws when one dies or 60 s pass. */
  async waitReady(instances: readonly ChaosInstance[] = this.instances): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (instances.some((instance) => instance.process.state.role === "starting")) {
      const dead = instances.find((instance) => instance.process.state.exit !== undefined);
      if (dead !== undefined) throw new Error(`${dead.id} exited while starting:\n${lastOutput(dead.process.state)}`);
      if (Date.now() > deadline) throw new Error("The instances did not start within 60 s.");
      await delay(100);
    }
  }

  /**
   * An app client on the cluster's storage (submits jobs, reads status, asks for step-down), as `chaos-runner`; with
   * this repository's kinds unless `options` names a registry (a scenario whose instances run kinds of their own).
   */
  client(extraEnv: Record<string, string> = {}, options: Partial<AppBuildOptions> = {}): CoordinatorApp {
    return createRepoApp(
      {
        ...this.env,
        REGION_NAME: undefined,
        WEBSITE_INSTANCE_ID: "chaos-runner",
        ...extraEnv,
      },
      options,
    );
  }

  /** Appends a record written by the chaos runner (faults, instance lifecycle). */
  note(instance: string, type: string, fields: Record<string, unknown> = {}): EventRecord {
    const record: EventRecord = { ts: new Date().toISOString(), instance, pid: undefined, type, ...fields };
    this.events.append(record);
    return record;
  }

  /** Waits for the first record from `fromIndex` on that matches; undefined after `timeoutMs`. */
  async waitForEvent(
    match: (record: EventRecord) => boolean,
    timeoutMs: number,
    fromIndex = 0,
  ): Promise<EventRecord | undefined> {
    const deadline = Date.now() + timeoutMs;
    let index = fromIndex;
    for (;;) {
      const records = this.records;
      for (; index < records.length; index++) {
        const record = records[index];
        if (record !== undefined && match(record)) return record;
      }
      if (Date.now() > deadline) return undefined;
      await delay(50);
    }
  }

  /** Stops every instance gracefully (thawing frozen ones first), then Azurite. */
  async stop(): Promise<void> {
    for (const instance of this.instances) if (instance.frozen) instance.process.signal("SIGCONT");
    await Promise.all(this.instances.map((instance) => instance.process.stop(35_000)));
    await this.azurite.stop();
  }

  private byState(state: InstanceState): ChaosInstance | undefined {
    return this.instances.find((instance) => instance.process.state === state);
  }
}
