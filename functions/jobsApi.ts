import {
  app,
  type HttpFunctionOptions,
  type HttpRequest,
  type HttpResponseInit,
  type InvocationContext,
} from "@azure/functions";
import { getCoordinatorApp } from "../src/app/context";
import { UnreadableJobError, cancelJob, getJobStatus, submitJob } from "../src/app/operations";
import { problem, readJsonBody } from "./http";

/** POST /api/jobs: submit a job. 202 with its id; 400 with field-level errors. */
export async function submitJobHandler(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const body = await readJsonBody(request);
  if (!body.ok) return body.response;
  const result = await submitJob(getCoordinatorApp(), body.body);
  if (!result.ok) return problem(400, "The job submission is not valid.", result.errors);
  context.info(`Job ${result.id} submitted with ${result.itemCount} items.`);
  if (result.wakeUp === "failed")
    context.warn(
      `Job ${result.id}: the wake-up could not be sent (${result.wakeUpError ?? "unknown error"}); the next timer tick starts it.`,
    );
  return {
    status: 202,
    jsonBody: { id: result.id, itemCount: result.itemCount, status: "pending" },
    headers: { location: `/api/jobs/${result.id}` },
  };
}

/**
 * GET /api/jobs/{id}: progress, failures and the aggregate. 404 for no such job; 503 naming the document and why for
 * a job whose state or spec this instance cannot read (a newer version wrote it during a rolling deploy, or it is
 * damaged).
 */
export async function getJobHandler(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const id = request.params.id ?? "";
  try {
    const status = await getJobStatus(getCoordinatorApp(), id);
    return status === undefined ? problem(404, `No job "${id}".`) : { status: 200, jsonBody: status };
  } catch (error) {
    if (!(error instanceof UnreadableJobError)) throw error;
    context.warn(`Job ${id} cannot be read by this instance: ${error.message}`);
    return unreadable(id, `Job "${id}" cannot be read by this instance: ${error.message}.`);
  }
}

/**
 * DELETE /api/jobs/{id}: request cancellation. 202 with the id (the leader ends the job as `cancelled` at its next
 * step; asking again before then is accepted again); 404 for no such job; 409 with its status for a job already ended;
 * 503 naming why for a job whose state this instance cannot read (nothing is stored).
 */
export async function cancelJobHandler(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const id = request.params.id ?? "";
  const result = await cancelJob(getCoordinatorApp(), id);
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
      id,
      `Job "${id}" cannot be cancelled by this instance: ${result.reason}. Nothing was stored; ask again later.`,
    );
  }
  context.info(`Cancellation of job ${id} requested.`);
  if (result.wakeUp === "failed")
    context.warn(
      `Job ${id}: the wake-up could not be sent (${result.wakeUpError ?? "unknown error"}); the next timer tick applies the cancellation.`,
    );
  return { status: 202, jsonBody: { id, cancelRequested: true }, headers: { location: `/api/jobs/${id}` } };
}

/**
 * 503 for a job this instance cannot read: during a rolling deploy an instance of the newer version can answer, so
 * the client may retry (`Retry-After`, in seconds).
 */
function unreadable(id: string, message: string): HttpResponseInit {
  return { ...problem(503, message), headers: { "retry-after": "60" } };
}

export const submitJobOptions: HttpFunctionOptions = {
  methods: ["POST"],
  authLevel: "function",
  route: "jobs",
  handler: submitJobHandler,
};
export const getJobOptions: HttpFunctionOptions = {
  methods: ["GET"],
  authLevel: "function",
  route: "jobs/{id}",
  handler: getJobHandler,
};
/** Cancelling any job takes the admin (master) key, more than the function key that opens the status page. */
export const cancelJobOptions: HttpFunctionOptions = {
  methods: ["DELETE"],
  authLevel: "admin",
  route: "jobs/{id}",
  handler: cancelJobHandler,
};

app.http("submitJob", submitJobOptions);
app.http("getJob", getJobOptions);
app.http("cancelJob", cancelJobOptions);
