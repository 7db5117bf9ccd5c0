import type {
  AppTerminateHandler,
  HttpFunctionOptions,
  HttpHandler,
  HttpMethod,
  StorageQueueFunctionOptions,
  TimerFunctionOptions,
} from "@azure/functions";
import type { CoordinatorClient } from "../app/client.js";
import type { CoordinatorSetupOptions } from "../app/options.js";
import { resolveSetup } from "../app/setup.js";
import { ConfigurationError } from "../library/errors.js";
import { assertSupportedNode } from "../library/nodeVersion.js";
import {
  cancelJobHandler,
  getJobHandler,
  getLeaderHandler,
  getStatusHandler,
  stepDownHandler,
  submitJobHandler,
} from "./httpHandlers.js";
import { hostJsonNotice } from "./hostJsonNotice.js";
import { recordRegisteredKinds } from "./registeredKinds.js";
import { appTerminateHandler, coordinatorHandler, wakeHandler, workerHandler } from "./triggers.js";

/** What {@link registerCoordinator} uses of `app` from `@azure/functions` (pass that object). */
export interface FunctionsApp {
  timer(name: string, options: TimerFunctionOptions): void;
  storageQueue(name: string, options: StorageQueueFunctionOptions): void;
  http(name: string, options: HttpFunctionOptions): void;
  hook: { appTerminate(handler: AppTerminateHandler): unknown };
}

/** The functions a coordinator registers. */
export type CoordinatorFunction =
  "coordinator" | "worker" | "wake" | "submitJob" | "getJob" | "cancelJob" | "getLeader" | "stepDown" | "getStatus";

/** Who may call an HTTP route: the Functions host's authorization levels. */
export type AuthLevel = "anonymous" | "function" | "admin";

/** The coordinator's HTTP routes. */
export interface HttpOptions {
  /**
   * Put the routes under this path (after the host's `/api`): "coordinator" gives `/api/coordinator/jobs`. Segments of
   * letters, digits, `-` and `_`. @default "" (`/api/jobs`, `/api/leader`, `/api/status`)
   */
  routePrefix?: string;
  /** Who may submit and read jobs, read the leader and open the status page. @default "function" */
  authLevel?: AuthLevel;
  /**
   * Who may cancel a job or ask the leader to step down: more than the key that opens the status page. @default "admin"
   * (the host's master key)
   */
  operatorAuthLevel?: AuthLevel;
}

/** Options of {@link registerCoordinator}: the setup (task kinds, connection, settings) and what is registered. */
export interface CoordinatorOptions extends CoordinatorSetupOptions {
  /** The functions' names, where you want others. @default the keys themselves ("coordinator", "worker", …) */
  functionNames?: Partial<Record<CoordinatorFunction, string>>;
  /** The HTTP routes, or `false` to register none (submit through the client instead). @default {} */
  http?: HttpOptions | false;
}

/** A registered coordinator. */
export interface Coordinator {
  /** The name each function was registered under (HTTP functions absent when `http` is false). */
  readonly functionNames: Readonly<Partial<Record<CoordinatorFunction, string>>>;
  /** Submits, cancels and reads jobs, tells who leads: use it from your app's own functions. */
  readonly client: CoordinatorClient;
}

/** A function name, as the host accepts it. */
const FUNCTION_NAME = /^[A-Za-z][\w-]{0,127}$/;
/** A route prefix: path segments of letters, digits, `-` and `_`. */
const ROUTE_PREFIX = /^([\w-]+(\/[\w-]+)*)?$/;
const AUTH_LEVELS: readonly AuthLevel[] = ["anonymous", "function", "admin"];

/**
 * Registers a leader-elected coordinator in your Function app: the timer that elects a leader and runs the
 * coordination step (`COORDINATOR_SCHEDULE`), the queue-triggered worker that runs your task kinds (`WORK_QUEUE`), the
 * wake-up queue (`WAKE_QUEUE`), the HTTP routes (submit, status, cancel, leader, step-down, status page) and the
 * terminate hook that hands the lease over on shutdown. Registers nothing else and connects to nothing until a
 * function runs; importing this package registers nothing.
 *
 * @example
 * ```ts
 * import { app } from "@azure/functions";
 * import { registerCoordinator, groupByKind } from "azure-leader-coordinator";
 *
 * export const coordinator = registerCoordinator(app, { taskKinds: [groupByKind, myKind] });
 * ```
 *
 * @throws ConfigurationError naming each bad option or setting and what is allowed (so the app fails at start), or on
 * a Node.js older than 22.12.
 */
export function registerCoordinator(app: FunctionsApp, options: CoordinatorOptions): Coordinator {
  assertSupportedNode();
  const setup = resolveSetup(options);
  const { settings, connection } = setup;
  const names = functionNamesOf(options);
  const http = options.http === false ? undefined : httpOptionsOf(options.http ?? {});
  app.timer(names.coordinator, {
    schedule: settings.COORDINATOR_SCHEDULE,
    handler: coordinatorHandler(setup.app, hostJsonNotice(process.env)),
  });
  app.storageQueue(names.worker, {
    queueName: settings.WORK_QUEUE,
    connection,
    handler: workerHandler(setup.app),
  });
  app.storageQueue(names.wake, { queueName: settings.WAKE_QUEUE, connection, handler: wakeHandler(setup.app) });
  const registered: Partial<Record<CoordinatorFunction, string>> = {
    coordinator: names.coordinator,
    worker: names.worker,
    wake: names.wake,
  };
  if (http !== undefined) {
    const route = (path: string): string => (http.routePrefix === "" ? path : `${http.routePrefix}/${path}`);
    const routes: [CoordinatorFunction, HttpMethod, string, AuthLevel, HttpHandler][] = [
      ["submitJob", "POST", "jobs", http.authLevel, submitJobHandler(setup.app)],
      ["getJob", "GET", "jobs/{id}", http.authLevel, getJobHandler(setup.app)],
      ["cancelJob", "DELETE", "jobs/{id}", http.operatorAuthLevel, cancelJobHandler(setup.app)],
      ["getLeader", "GET", "leader", http.authLevel, getLeaderHandler(setup.app)],
      ["stepDown", "POST", "leader/step-down", http.operatorAuthLevel, stepDownHandler(setup.app)],
      ["getStatus", "GET", "status", http.authLevel, getStatusHandler(setup.app)],
    ];
    for (const [key, method, path, authLevel, handler] of routes) {
      app.http(names[key], { methods: [method], authLevel, route: route(path), handler });
      registered[key] = names[key];
    }
  }
  app.hook.appTerminate(appTerminateHandler);
  recordRegisteredKinds(setup.registry);
  return { functionNames: registered, client: setup.client };
}

/** Every function's name: the option's, else the key. @throws ConfigurationError for a bad or repeated name. */
function functionNamesOf(options: CoordinatorOptions): Record<CoordinatorFunction, string> {
  const keys: CoordinatorFunction[] = [
    "coordinator",
    "worker",
    "wake",
    "submitJob",
    "getJob",
    "cancelJob",
    "getLeader",
    "stepDown",
    "getStatus",
  ];
  const names = Object.fromEntries(keys.map((key) => [key, options.functionNames?.[key] ?? key])) as Record<
    CoordinatorFunction,
    string
  >;
  const problems = keys
    .filter((key) => !FUNCTION_NAME.test(names[key]))
    .map(
      (key) =>
        `functionNames.${key} ${JSON.stringify(names[key])} must be a letter, then up to 127 letters, digits, '_' or '-'`,
    );
  const seen = new Map<string, CoordinatorFunction>();
  for (const key of keys) {
    const other = seen.get(names[key].toLowerCase());
    if (other !== undefined) problems.push(`functionNames.${key} and functionNames.${other} are both "${names[key]}"`);
    seen.set(names[key].toLowerCase(), key);
  }
  const unknown = Object.keys(options.functionNames ?? {}).filter((key) => !(keys as string[]).includes(key));
  if (unknown.length > 0)
    problems.push(`functionNames has ${unknown.join(", ")}; the functions are ${keys.join(", ")}`);
  if (problems.length > 0) throw new ConfigurationError(`Invalid coordinator options: ${problems.join("; ")}.`);
  return names;
}

/** The HTTP options with their defaults. @throws ConfigurationError for a bad prefix or auth level. */
function httpOptionsOf(http: HttpOptions): Required<HttpOptions> {
  const resolved = {
    routePrefix: http.routePrefix ?? "",
    authLevel: http.authLevel ?? "function",
    operatorAuthLevel: http.operatorAuthLevel ?? "admin",
  };
  const problems: string[] = [];
  if (!ROUTE_PREFIX.test(resolved.routePrefix))
    problems.push(
      `http.routePrefix ${JSON.stringify(resolved.routePrefix)} must be path segments of letters, digits, '-' and '_', without a leading or trailing '/'`,
    );
  for (const name of ["authLevel", "operatorAuthLevel"] as const)
    if (!AUTH_LEVELS.includes(resolved[name]))
      problems.push(`http.${name} ${JSON.stringify(resolved[name])} must be one of ${AUTH_LEVELS.join(", ")}`);
  if (problems.length > 0) throw new ConfigurationError(`Invalid coordinator options: ${problems.join("; ")}.`);
  return resolved;
}
