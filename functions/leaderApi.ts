import { app, type HttpFunctionOptions, type HttpResponseInit, type InvocationContext } from "@azure/functions";
import { getCoordinatorApp } from "../src/app/context";
import { getLeader, stepDown } from "../src/app/operations";

/** GET /api/leader: holder, epoch, since, transitions. */
export async function getLeaderHandler(): Promise<HttpResponseInit> {
  return { status: 200, jsonBody: await getLeader(getCoordinatorApp()) };
}

/**
 * POST /api/leader/step-down: asks the current leader to step down at its next renewal (202), or 409 if nobody leads.
 */
export async function stepDownHandler(_request: unknown, context: InvocationContext): Promise<HttpResponseInit> {
  const epoch = await stepDown(getCoordinatorApp());
  if (epoch === undefined)
    return { status: 409, jsonBody: { error: "Nobody leads right now; there is nothing to step down." } };
  context.warn(`Step-down requested for the leader of epoch ${epoch}.`);
  return { status: 202, jsonBody: { revokedEpoch: epoch } };
}

export const getLeaderOptions: HttpFunctionOptions = {
  methods: ["GET"],
  authLevel: "function",
  route: "leader",
  handler: getLeaderHandler,
};
/** Stepping the leader down takes the admin (master) key, more than the function key that opens the status page. */
export const stepDownOptions: HttpFunctionOptions = {
  methods: ["POST"],
  authLevel: "admin",
  route: "leader/step-down",
  handler: stepDownHandler,
};

app.http("getLeader", getLeaderOptions);
app.http("stepDown", stepDownOptions);
