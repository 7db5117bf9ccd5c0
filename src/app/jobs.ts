/** Job operations, for callers that only submit and watch jobs (CLI, local runner, HTTP). */
export { submitJob, cancelJob, getJobStatus } from "./operations.js";
export type { CancelResult, SubmitResult } from "./operations.js";
export type { JobStatus } from "../coordination/jobs/status.js";
export type { FieldError } from "../coordination/jobs/submit.js";
export { hasEnded } from "../coordination/state/jobStatus.js";
export { IDEMPOTENCY_KEY_HEADER } from "../coordination/jobs/idempotency.js";
