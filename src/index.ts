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
} from "./host/registerCoordinator";
export type { CoordinatorSetupOptions, SettingName, SettingValues } from "./app/options";
export type { CoordinatorClient, JobSubmission, WaitOptions } from "./app/client";
export { createCoordinatorClient } from "./app/createClient";
export type { CancelResult, SubmitOptions, SubmitResult, WakeUpReport } from "./app/results";
export type { CancelRequestResult, EndedStatus, FieldError, JobStatus, RunStatus } from "./coordination/jobStatus";
export {
  defineTaskKind,
  ItemError,
  type TaskAggregate,
  type TaskContext,
  type TaskInput,
  type TaskKind,
} from "./coordination/taskKinds";
export {
  groupByKind,
  groupByView,
  type GroupByParams,
  type GroupByPartial,
  type GroupStats,
} from "./coordination/groupBy";
export { storageClientsFromSettings, type StorageClients } from "./azure/clients";
export { ConfigurationError, type Logger, type LeaderInfo } from "./library/index";
