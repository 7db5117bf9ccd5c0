/**
 * `azure-leader-coordinator/internal`: what the development package (`azure-leader-coordinator-dev`: the local
 * Functions host, `local`, the testing entry) builds on. Not for apps: it carries no compatibility promise, and the
 * development package requires this package at exactly its own version. Importing it registers nothing.
 *
 * @packageDocumentation
 */
export { ConfigurationError } from "./library/errors.js";
export { delay, withJitter, type Abortable } from "./library/util/delay.js";
export { assertSupportedNode } from "./library/nodeVersion.js";
export { eventEpoch, parseEventLine, type AppEvent, type AppEventType } from "./app/events.js";
export { instanceIdFrom } from "./app/context.js";
export { parseTimeSpanMs } from "./app/timeSpan.js";
export { parseNcrontab } from "./app/schedule.js";
export { readSettings, settingsSchema, type Settings } from "./app/settings.js";
export { checkHostJsonFile, describeHostJsonFindings, type HostJsonFinding } from "./app/hostJsonCheck.js";
export { currentPlatform, defaultNewBatchThreshold, type HostPlatform } from "./app/hostPlatform.js";
export { decodeBase64, encodeBody, type MessageEncoding } from "./azure/StorageQueue.js";
export { createStorageClients, type StorageClientOptions, type StorageConnection } from "./azure/clients.js";
export { retryAfterCreating } from "./azure/OnDemandCreation.js";
export { TaskRegistry, type RegisteredKind } from "./coordination/kinds/taskRegistry.js";
export { issuesText, type SchemaIssue } from "./coordination/kinds/standardSchema.js";
export { validateSubmission } from "./coordination/jobs/submit.js";
export { inputOf } from "./coordination/worker/workerInputs.js";
export { hasEnded, type FieldError, type JobStatus } from "./coordination/state/jobStatus.js";
export { registeredTaskKinds } from "./host/registeredKinds.js";
export { MAX_BODY_BYTES } from "./host/http.js";
export { listFlag, numberFlag, parseFlags, pathFlag, UsageError, type NumberRange } from "./cli/flags.js";
export { readJobFile } from "./cli/jobFile.js";
export {
  JobsHttpApi,
  type BaseUrl,
  type HttpCancelResult,
  type HttpSubmitResult,
  type JobsApi,
} from "./cli/jobsHttpApi.js";
export {
  ENQUEUE_EXIT_CODES,
  ENQUEUE_FLAGS,
  parseEnqueueArgs,
  runEnqueue,
  type CommandIo,
  type EnqueueArgs,
  type EnqueueParseOptions,
} from "./cli/enqueueCommand.js";
export { runProgram, runProgramAsProcess, type Command, type Program, type ProgramOptions } from "./cli/program.js";
