import { dirname, resolve } from "node:path";
import { currentPlatform } from "azure-leader-coordinator/internal";
import { AppHooks } from "./appHooks.js";
import { findTrigger } from "./bindings.js";
import { readHostConfig, type HostConfig, type QueueSettings } from "./hostConfig.js";
import { HttpListener, type HttpRoute, type LocalHttpAnswer, type LocalHttpRequest } from "./httpTrigger.js";
import { invokeFunction, type HostLogSink, type Invoker } from "./invoke.js";
import { hostIdFrom, ListenerLock, type ListenerLockSettings } from "./listenerLock.js";
import { unsupportedOutputs, writeQueueOutputs } from "./outputBindings.js";
import { QueueClients } from "./queueClients.js";
import { QueueListener } from "./queueTrigger.js";
import { setSystemLogSink, type FunctionApp } from "./registrations.js";
import { ScheduleStatusBlob } from "./scheduleStatusBlob.js";
import { TimerListener } from "./timerTrigger.js";

/**
 * A small Functions host for the Node v4 programming model: it runs the registrations captured by
 * {@link loadFunctionApp} — timer, storage queue and HTTP triggers, and storage queue outputs — against real
 * storage (Azurite locally), with host.json's queue settings, the timer listener lock (one instance per app fires a
 * timer, when host storage AzureWebJobsStorage is set), and the app's appStart/appTerminate hooks. It is what
 * each local instance process runs; it replaces `func start`, which cannot be installed here. Where it differs from the
 * real host (other trigger and output types are reported and skipped, …): docs/LOCAL-HOST.md, "Known gaps".
 */

/** Options of a {@link FunctionsHost}. */
export interface FunctionsHostOptions {
  /** The app, from `loadFunctionApp`. */
  app: FunctionApp;
  /** Receives every log line: the host's, the library's and the functions' own. */
  log: HostLogSink;
  /** App settings. @default process.env */
  env?: Record<string, string | undefined>;
  /** host.json to read. @default none: every setting at the Functions host's default */
  hostJsonPath?: string;
  /** Queue settings that win over host.json (tests use short timings). */
  queueOverrides?: Partial<QueueSettings>;
  /** Timer listener lock periods that win over host.json `singleton` (tests and the chaos suite shorten them). */
  singletonOverrides?: Partial<ListenerLockSettings>;
  /** Port of the HTTP listener; 0 picks a free one. @default 0 */
  httpPort?: number;
  /** Visibility timeout of received queue messages, renewed while running, in ms. @default 600000 (the host's) */
  messageLeaseMs?: number;
  /** Fault injection: extra ms each invocation of a function takes, by function name (slow work). @default none */
  invokeDelayMs?: Readonly<Record<string, number>>;
  /**
   * Serve only the HTTP triggers: no timer, no queue listener (`enqueue --app` submits through the app's own route
   * without becoming an instance of it). @default false
   */
  httpOnly?: boolean;
  /**
   * Whether the HTTP triggers listen on a port. Without one they are reached only in this process, through
   * {@link FunctionsHost.answer}: `enqueue --app` opens no port that another process (or a browser page) could reach
   * the app's routes through, the operator's storage behind them. @default true
   */
  listen?: boolean;
  /** How long {@link FunctionsHost.stop} waits for running invocations and appTerminate hooks, in ms. @default 30000 */
  stopTimeoutMs?: number;
}

/** A running (or stopped) local host. */
export class FunctionsHost {
  /** The settings read from host.json. */
  readonly config: HostConfig;
  private readonly env: Record<string, string | undefined>;
  private readonly listeners: (TimerListener | QueueListener)[] = [];
  private readonly http: HttpListener;
  private readonly hooks: AppHooks;
  /** The function app's folder (where host.json is), as appStart hooks see it. */
  private readonly appDirectory: string;
  private started = false;
  /** The HTTP routes served (once started, on {@link httpPort}). */
  get httpRoutes(): HttpRoute[] {
    return this.http.routes;
  }

  /** The HTTP port once started, if any function is HTTP-triggered. */
  httpPort: number | undefined;

  constructor(private readonly options: FunctionsHostOptions) {
    this.env = options.env ?? process.env;
    const hostJsonPath = options.hostJsonPath;
    this.appDirectory = hostJsonPath === undefined ? process.cwd() : dirname(resolve(hostJsonPath));
    this.config = readHostConfig(
      hostJsonPath,
      options.queueOverrides,
      options.singletonOverrides,
      currentPlatform(this.env),
    );
    const hostStorage = this.env.AzureWebJobsStorage?.trim();
    const hostId = hostIdFrom(this.env);
    const clients = new QueueClients(this.env);
    const invoke: Invoker = (fn, input) =>
      invokeFunction(
        fn,
        options.app.programmingModel,
        input,
        options.log,
        (response) => writeQueueOutputs(fn, response, clients, this.config.queues, this.env),
        options.invokeDelayMs?.[fn.metadata.name] ?? 0,
      );
    this.http = new HttpListener(invoke, options.log, this.config.httpRoutePrefix, this.env);
    for (const fn of options.app.functions) {
      const name = fn.metadata.name;
      if (/^(true|1)$/i.test(this.env[`AzureWebJobs.${name}.Disabled`] ?? "")) {
        this.info(`Function "${name}" is disabled by app setting AzureWebJobs.${name}.Disabled.`);
        continue;
      }
      const trigger = findTrigger(fn.metadata);
      const skipped = unsupportedOutputs(fn);
      if (skipped.length > 0)
        this.warn(
          `Function "${name}": output bindings ${skipped.join(", ")} are not emulated locally and will not be written.`,
        );
      const type = trigger.type.toLowerCase();
      if (options.httpOnly === true && type !== "httptrigger") continue;
      switch (type) {
        case "timertrigger": {
          const hostLog = (level: "information" | "warning", message: string): void =>
            options.log({ level, category: "host", message });
          const lock = hostStorage
            ? new ListenerLock(hostStorage, hostId, name, this.config.singleton, hostLog)
            : undefined;
          // Used only when the schedule is monitored (timerTrigger.ts decides).
          const statusStore = hostStorage ? new ScheduleStatusBlob(hostStorage, hostId, name, hostLog) : undefined;
          if (lock === undefined)
            this.warn(
              `Function "${name}": no host storage (AzureWebJobsStorage), so no listener lock and no schedule monitor: this instance fires the timer whatever other instances of the app do, and runs no missed occurrence.`,
            );
          this.listeners.push(new TimerListener(fn, trigger, invoke, this.env, lock, statusStore));
          break;
        }
        case "queuetrigger":
          this.listeners.push(
            new QueueListener(fn, trigger, {
              settings: this.config.queues,
              clients,
              invoke,
              log: options.log,
              env: this.env,
              messageLeaseMs: options.messageLeaseMs,
            }),
          );
          break;
        case "httptrigger":
          this.http.add(fn, trigger);
          break;
        default:
          this.warn(
            `Function "${name}": trigger type "${trigger.type}" is not emulated locally; the function will not run.`,
          );
      }
    }
    this.hooks = new AppHooks(options.app.hooks, (level, message) => {
      options.log({ level, category: "host", message });
    });
    const notRun = this.hooks.notRun;
    if (notRun.length > 0) this.warn(`Hooks (${notRun.join(", ")}) are registered but not run by the local host.`);
  }

  /** Runs the appStart hooks, then starts every listener; resolves once the HTTP port (if any) is listening. */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    setSystemLogSink((level, category, message) => {
      this.options.log({ level, category, message });
    });
    await this.hooks.runAppStart(this.appDirectory);
    if (this.http.hasFunctions && this.options.listen !== false)
      this.httpPort = await this.http.listen(this.options.httpPort ?? 0);
    for (const listener of this.listeners) listener.start();
    this.info(
      `Host started: ${this.options.app.functions.length} function(s)${this.httpPort === undefined ? "" : `, HTTP on 127.0.0.1:${this.httpPort}`}.`,
    );
  }

  /** Answers a request to the app's HTTP triggers in this process, with or without a port (see `listen`). */
  answer(request: LocalHttpRequest): Promise<LocalHttpAnswer> {
    return this.http.answer(request);
  }

  /**
   * Graceful stop, as when the host shuts a worker down: stops polling and timers, closes the HTTP port, runs the
   * appTerminate hooks while invocations may still be running (that is how the app learns to stop them), and waits —
   * all bounded by `stopTimeoutMs` — for the hooks and the running invocations. Returns false when invocations were
   * still running at the deadline; their queue messages reappear after their lease.
   */
  async stop(): Promise<boolean> {
    const timeoutMs = this.options.stopTimeoutMs ?? 30_000;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<false>((resolveDeadline) => {
      timer = setTimeout(() => resolveDeadline(false), timeoutMs);
    });
    const drained = Promise.all([this.http.close(), ...this.listeners.map((listener) => listener.stop())]).then(
      () => true,
    );
    const terminated = this.hooks.runAppTerminate(timeoutMs);
    const finished = await Promise.race([Promise.all([drained, terminated]).then(([done]) => done), deadline]);
    clearTimeout(timer);
    this.info(finished ? "Host stopped." : `Host stopped with invocations still running after ${timeoutMs} ms.`);
    return finished;
  }

  private info(message: string): void {
    this.options.log({ level: "information", category: "host", message });
  }

  private warn(message: string): void {
    this.options.log({ level: "warning", category: "host", message });
  }
}
