import { checkCredential } from "../azure/clients.js";
import type { AggregateOf, TaskKind } from "../coordination/kinds/taskKinds.js";
import { TaskRegistry } from "../coordination/kinds/taskRegistry.js";
import type { JobStatus } from "../coordination/state/jobStatus.js";
import { ConfigurationError } from "../library/errors.js";
import { delay } from "../library/util/delay.js";
import type { CoordinatorClient, JobReadOptions, WaitOptions } from "./client.js";
import { createCoordinatorApp, type CoordinatorApp } from "./context.js";
import { cancelJob, getJobStatus, getLeader, stepDown, submitJob } from "./operations.js";
import { hasEnded } from "../coordination/state/jobStatus.js";
import { SETTING_NAMES, type CoordinatorSetupOptions } from "./options.js";
import { CONNECTION_SETTINGS, readSettings, type Settings } from "./settings.js";
import { processShutdown } from "./shutdown.js";

/** A coordinator's validated setup: its settings, its kinds, and its app, built on first use. */
export interface CoordinatorSetup {
  settings: Settings;
  connection: string;
  registry: TaskRegistry;
  /** The app (storage clients, elector, …), built on the first call and shared after. */
  app: () => CoordinatorApp;
  client: CoordinatorClient;
}

/** A connection name, as the host accepts app setting names: letters, digits, `_` and `:`. */
const CONNECTION_NAME = /^[A-Za-z_][\w:]{0,127}$/;

/**
 * Validates a coordinator's options and settings up front (so a bad value fails at start, not at the first tick), and
 * prepares its app without connecting to anything.
 *
 * @throws ConfigurationError naming each bad option or setting and what is allowed.
 */
export function resolveSetup(options: CoordinatorSetupOptions): CoordinatorSetup {
  const { taskKinds, connection = CONNECTION_SETTINGS.coordination, settings: values = {} } = options;
  if (!Array.isArray(taskKinds) || taskKinds.length === 0)
    throw new ConfigurationError("taskKinds must name at least one task kind (e.g. [groupByKind] or your own).");
  if (!CONNECTION_NAME.test(connection))
    throw new ConfigurationError(
      `connection ${JSON.stringify(connection)} must be the name of an app setting: a letter or '_', then up to 127 letters, digits, '_' or ':'.`,
    );
  const known = new Set<string>(SETTING_NAMES);
  const unknown = Object.keys(values).filter((name) => !known.has(name));
  if (unknown.length > 0)
    throw new ConfigurationError(
      `settings has ${unknown.map((name) => JSON.stringify(name)).join(", ")}, which ${unknown.length === 1 ? "is not a setting" : "are not settings"}; known settings: ${[...known].join(", ")}.`,
    );
  const env: Record<string, string | undefined> = { ...(options.env ?? process.env) };
  for (const [name, value] of Object.entries(values)) env[name] = String(value);
  const credential = checkCredential(options.credential);
  const registry = new TaskRegistry(taskKinds);
  const settings = readSettings(env);
  let built: CoordinatorApp | undefined;
  const app = (): CoordinatorApp =>
    (built ??= createCoordinatorApp(env, { registry, connection, credential, abortSignal: processShutdown.signal }));
  return { settings, connection, registry, app, client: clientOf(app) };
}

/** A client over an app's storage ports (built lazily: nothing connects until the first call). */
export function clientOf(app: () => CoordinatorApp): CoordinatorClient {
  const client: CoordinatorClient = {
    submitJob: (submission, options) => submitJob(app(), submission, options),
    getJob: async <Kind extends TaskKind>(id: string, options: JobReadOptions<Kind> = {}) =>
      ofKind(await getJobStatus(app(), id, options), options.kind),
    cancelJob: (id, options) => cancelJob(app(), id, options),
    async waitForJob<Kind extends TaskKind>(id: string, options: WaitOptions<Kind> = {}) {
      for (;;) {
        const status = await client.getJob<Kind>(id, options);
        if (status === undefined) throw new Error(`No job "${id}".`);
        if (hasEnded(status.status)) return status;
        await delay(options.pollIntervalMs ?? 1000, options);
      }
    },
    getLeader: (options) => getLeader(app(), options),
    requestStepDown: (options) => stepDown(app(), options),
  };
  return client;
}

/**
 * The status typed by the kind the caller named (`getJob(id, { kind })`).
 *
 * @throws Error when the job is of another kind: its aggregate is not what the caller's type says.
 */
function ofKind<Kind extends TaskKind>(
  status: JobStatus | undefined,
  kind: Kind | undefined,
): JobStatus<AggregateOf<Kind>> | undefined {
  if (status !== undefined && kind !== undefined && status.kind !== kind.name)
    throw new Error(`Job ${status.id} is of kind "${status.kind}", not "${kind.name}".`);
  // The aggregate is the named kind's view of its partial (status.ts reads it through that kind).
  return status as JobStatus<AggregateOf<Kind>> | undefined;
}
