/**
 * The package's main entry: a leader-elected coordinator for Azure Functions. Importing it registers nothing; call
 * {@link registerCoordinator} with your app. The leader-election library alone is the `/leader-election` entry.
 */
export {
  registerCoordinator,
  type AuthLevel,
  type Coordinator,
  type CoordinatorFunction,
  type CoordinatorOptions,
  type FunctionsApp,
  type HttpOptions,
} from "./host/registerCoordinator.js";
export { SETTING_NAMES, type CoordinatorSetupOptions, type SettingName, type SettingValues } from "./app/options.js";
export type { CoordinatorClient, JobReadOptions, JobSubmission, WaitOptions } from "./app/client.js";
export { createCoordinatorClient } from "./app/createClient.js";
export type { CancelResult, SubmitJobOptions, SubmitOptions, SubmitResult, WakeUpReport } from "./app/results.js";
export type {
  CancelRequestResult,
  EndedStatus,
  FieldError,
  JobStatus,
  RunStatus,
} from "./coordination/state/jobStatus.js";
export {
  defineTaskKind,
  ItemError,
  type AggregateOf,
  type TaskAggregate,
  type TaskContext,
  type TaskInput,
  type TaskKind,
  type TaskLimits,
  type RateLimit,
  type LimitItem,
  type LimitKey,
} from "./coordination/kinds/taskKinds.js";
export {
  groupByKind,
  groupByView,
  type GroupByParams,
  type GroupByPartial,
  type GroupStats,
} from "./groupBy/groupBy.js";
export { storageClientsFromSettings, type CredentialOptions, type StorageClients } from "./azure/clients.js";
export {
  azureSdkLogger,
  ConfigurationError,
  type Abortable,
  type LeaderInfo,
  type LeaseState,
  type Logger,
} from "./library/index.js";
