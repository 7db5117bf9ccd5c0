import type { TokenCredential } from "@azure/identity";
import type { TaskKind } from "../coordination/kinds/taskKinds.js";

/**
 * The options a coordinator is set up with in code (plain types: part of the package's public declarations). Every
 * setting is documented with its default and range in `settings.ts`.
 */

/** The app settings a coordinator reads, by name (validated in `settings.ts`, whose schema has exactly these keys). */
export const SETTING_NAMES = [
  "COORDINATOR_SCHEDULE",
  "LEASE_CONTAINER",
  "LEASE_BLOB",
  "LEASE_DURATION_SECONDS",
  "LEASE_RENEW_INTERVAL_MS",
  "LEASE_RENEW_DEADLINE_MS",
  "LEASE_TAKEOVER_DEADLINE_MS",
  "LEASE_HEARTBEAT_INTERVAL_MS",
  "LEADER_WATCH_INTERVAL_MS",
  "LEADER_SENTINEL_SECONDS",
  "STATE_CONTAINER",
  "INPUT_CONTAINER",
  "SYSTEM_CONTAINER",
  "WORK_QUEUE",
  "RESULTS_QUEUE",
  "WAKE_QUEUE",
  "ACTIVITY_WAKE_INTERVAL_MS",
  "STEP_BUDGET_MS",
  "DISPATCH_BATCH_SIZE",
  "WORK_UNIT_CONCURRENCY",
  "WORK_UNIT_MAX_ITEMS",
  "WORK_UNIT_MAX_BLOB_ITEMS",
  "WORK_UNIT_SPREAD",
  "WORK_UNIT_MAX_BYTES",
  "MAX_AGGREGATE_GROUPS",
  "MAX_INPUT_BLOB_BYTES",
  "MAX_JOB_DOCUMENT_BYTES",
  "JOB_RETENTION_HOURS",
  "FLOW_GRANT_SECONDS",
  "STEP_STALL_TIMEOUT_MS",
] as const;

/** An app setting the coordinator reads. */
export type SettingName = (typeof SETTING_NAMES)[number];

/** Values for app settings given in code: each wins over the environment's value of the same setting. */
export type SettingValues = Partial<Record<SettingName, string | number>>;

/** What a coordinator is built from, in code; everything else comes from app settings (the environment). */
export interface CoordinatorSetupOptions {
  /** The task kinds jobs may name (at least one; names unique). */
  taskKinds: readonly TaskKind[];
  /**
   * The coordination storage account: the name of an app setting holding a connection string (local, Azurite), or the
   * prefix of identity-based settings in Azure (`<name>__blobServiceUri`, `<name>__queueServiceUri`,
   * `<name>__credential`, `<name>__clientId`), as the Functions host resolves a binding's `connection`.
   * @default "COORDINATION_STORAGE"
   */
  connection?: string;
  /**
   * The identity the coordinator's storage clients authenticate as in Azure, instead of the `DefaultAzureCredential`
   * its identity-based settings would build: any `TokenCredential` of `@azure/identity` (`ManagedIdentityCredential`,
   * `WorkloadIdentityCredential`, a `ChainedTokenCredential`, …), as the Azure SDK clients take one. Used with
   * `<connection>__blobServiceUri` and `__queueServiceUri` (`__clientId` is then not read); a connection string (local,
   * Azurite) carries its own key and does not use it. The Functions host's own queue triggers still authenticate by
   * the `<connection>__credential` and `__clientId` settings. @default DefaultAzureCredential (with `__clientId`)
   */
  credential?: TokenCredential;
  /**
   * App settings given in code (queue, container and lease names, the schedule, limits), each winning over the
   * environment's value: `{ COORDINATOR_SCHEDULE: "*\/30 * * * * *", WORK_QUEUE: "thumbnails" }`. Every value is
   * validated as the setting is. @default none: the environment's values, else each setting's default
   */
  settings?: SettingValues;
  /** Where app settings are read. @default process.env */
  env?: Record<string, string | undefined>;
}
