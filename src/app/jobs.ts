/** Job operations, for callers that only submit and watch jobs (CLI, local runner, HTTP). */
export { submitJob, cancelJob, getJobStatus } from "./operations";
export type { CancelResult, SubmitResult } from "./operations";
export type { JobStatus } from "../coordination/status";
export type { FieldError } from "../coordination/submit";
