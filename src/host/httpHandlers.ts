import { randomBytes } from "node:crypto";
import type { HttpRequest, HttpResponseInit, InvocationContext } from "@azure/functions";
import {
  UnreadableJobError,
  cancelJob,
  getJobStatus,
  getLeader,
  getStatusPage,
  stepDown,
  submitJob,
} from "../app/operations.js";
import { problem, readJsonBody } from "./http.js";
import { IDEMPOTENCY_KEY_HEADER } from "../app/jobs.js";
import type { AppSource } from "./triggers.js";

/**
 * POST /api/jobs: submit a job. 202 with its id; 400 with field-level errors. With an idempotency key (the body's
 * `idempotencyKey`, or the `Idempotency-Key` header): 202 when this request made the job; 200 with the first job's id
 * (and `replayed: true`) when the same submission was made before under the key; 409 naming the job when the key was
 * used for another submission (nothing stored).
 */
export function submitJobHandler(app: AppSource) {
  return async (request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> => {
    const body = await readJsonBody(request);
    if (!body.ok) return body.response;
    const idempotencyKey = request.headers.get(IDEMPOTENCY_KEY_HEADER) ?? undefined;
    const result = await submitJob(app(), body.body, idempotencyKey === undefined ? {} : { idempotencyKey });
    if (!result.ok)
      return result.conflict === undefined
        ? problem(400, "The job submission is not valid.", result.errors)
        : {
            ...problem(409, "The idempotency key was used for another submission; nothing was stored.", result.errors),
            ...(result.conflict.jobId === undefined
              ? {}
              : { headers: { location: `${pathOf(request)}/${result.conflict.jobId}` } }),
          };
    if (result.replayed === true)
      context.info(`Job ${result.id}: the same submission again, under its idempotency key.`);
    else context.info(`Job ${result.id} submitted with ${result.itemCount} items.`);
    if (result.wakeUp === "failed")
      context.warn(
        `Job ${result.id}: the wake-up could not be sent (${result.wakeUpError ?? "unknown error"}); the next timer tick starts it.`,
      );
    return {
      status: result.replayed === true ? 200 : 202,
      // A replay's job may have run since: its status is GET's to tell.
      jsonBody:
        result.replayed === true
          ? { id: result.id, itemCount: result.itemCount, replayed: true }
          : { id: result.id, itemCount: result.itemCount, status: "pending" },
      headers: { location: `${pathOf(request)}/${result.id}` },
    };
  };
}

/**
 * GET /api/jobs/{id}: progress, failures and the aggregate. 404 for no such job; 503 naming the document and why for
 * a job whose state or spec this instance cannot read (a newer version wrote it during a rolling deploy, or it is
 * damaged).
 */
export function getJobHandler(app: AppSource) {
  return async (request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> => {
    const id = request.params.id ?? "";
    try {
      const status = await getJobStatus(app(), id);
      return status === undefined ? problem(404, `No job "${id}".`) : { status: 200, jsonBody: status };
    } catch (error) {
      if (!(error instanceof UnreadableJobError)) throw error;
      context.warn(`Job ${id} cannot be read by this instance: ${error.message}`);
      return unreadable(`Job "${id}" cannot be read by this instance: ${error.message}.`);
    }
  };
}

/**
 * DELETE /api/jobs/{id}: request cancellation. 202 with the id (the leader ends the job as `cancelled` at its next
 * step; asking again before then is accepted again); 404 for no such job; 409 with its status for a job already ended;
 * 503 naming why for a job whose state this instance cannot read (nothing is stored).
 */
export function cancelJobHandler(app: AppSource) {
  return async (request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> => {
    const id = request.params.id ?? "";
    const result = await cancelJob(app(), id);
    if (result.outcome === "not-found") return problem(404, `No job "${id}".`);
    if (result.outcome === "ended")
      return {
        status: 409,
        jsonBody: {
          error: `Job "${id}" has already ended (${result.status}); nothing to cancel.`,
          id,
          status: result.status,
        },
      };
    if (result.outcome === "unreadable") {
      context.warn(`Job ${id} cannot be read by this instance: ${result.reason}`);
      return unreadable(
        `Job "${id}" cannot be cancelled by this instance: ${result.reason}. Nothing was stored; ask again later.`,
      );
    }
    context.info(`Cancellation of job ${id} requested.`);
    if (result.wakeUp === "failed")
      context.warn(
        `Job ${id}: the wake-up could not be sent (${result.wakeUpError ?? "unknown error"}); the next timer tick applies the cancellation.`,
      );
    return { status: 202, jsonBody: { id, cancelRequested: true }, headers: { location: pathOf(request) } };
  };
}

/** GET /api/leader: holder, epoch, since, transitions. */
export function getLeaderHandler(app: AppSource) {
  return async (): Promise<HttpResponseInit> => ({ status: 200, jsonBody: await getLeader(app()) });
}

/** POST /api/leader/step-down: asks the leader to step down at its next renewal (202), or 409 if nobody leads. */
export function stepDownHandler(app: AppSource) {
  return async (_request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> => {
    const epoch = await stepDown(app());
    if (epoch === undefined)
      return { status: 409, jsonBody: { error: "Nobody leads right now; there is nothing to step down." } };
    context.warn(`Step-down requested for the leader of epoch ${epoch}.`);
    return { status: 202, jsonBody: { revokedEpoch: epoch } };
  };
}

/**
 * GET /api/status: one self-contained HTML page — who leads, the recent terms, jobs with progress, failures, poison
 * queue depths — that refreshes itself. From a browser, `?code=<key>` (the page refreshes from its own URL, so the key
 * goes along).
 */
export function getStatusHandler(app: AppSource) {
  return async (): Promise<HttpResponseInit> => {
    const page = await getStatusPage(app(), { nonce: randomBytes(16).toString("base64") });
    return { status: 200, headers: page.headers, body: page.html };
  };
}

/**
 * 503 for a job this instance cannot read: during a rolling deploy an instance of the newer version can answer, so
 * the client may retry (`Retry-After`, in seconds).
 */
function unreadable(message: string): HttpResponseInit {
  return { ...problem(503, message), headers: { "retry-after": "60" } };
}

/** The request's path (`/api/jobs`, `/api/jobs/<id>`), without a trailing slash. */
function pathOf(request: HttpRequest): string {
  return new URL(request.url).pathname.replace(/\/+$/, "");
}
