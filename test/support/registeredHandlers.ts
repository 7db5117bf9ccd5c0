import { HttpRequest, InvocationContext, type Timer } from "@azure/functions";
import { resolveSetup } from "../../src/app/setup";
import { groupByKind } from "../../src/groupBy/groupBy";
import * as http from "../../src/host/httpHandlers";
import { coordinatorHandler as timerHandler } from "../../src/host/triggers";
import { uniqueName } from "./azuriteFixture";

/** The handlers `registerCoordinator` registers, over one app built from process.env as a registration builds it. */
export function registeredHandlers() {
  const setup = resolveSetup({ taskKinds: [groupByKind] });
  return {
    app: setup.app,
    submitJobHandler: http.submitJobHandler(setup.app),
    getJobHandler: http.getJobHandler(setup.app),
    cancelJobHandler: http.cancelJobHandler(setup.app),
    getLeaderHandler: http.getLeaderHandler(setup.app),
    stepDownHandler: http.stepDownHandler(setup.app),
    getStatusHandler: http.getStatusHandler(setup.app),
    coordinatorHandler: timerHandler(setup.app),
  };
}

/** POST /api/jobs with this body (as text) and headers. */
export function postJob(body: string, headers: Record<string, string> = {}): HttpRequest {
  return new HttpRequest({
    method: "POST",
    url: "http://localhost/api/jobs",
    body: { string: body },
    headers: { "content-type": "application/json", ...headers },
  });
}

/** A fresh invocation context whose logs go nowhere. */
export const invocationContext = (): InvocationContext =>
  new InvocationContext({ functionName: "test", invocationId: uniqueName("inv"), logHandler: () => undefined });

/** A timer tick as the host hands it to the coordinator's timer function. */
export const timerTick: Timer = {
  isPastDue: false,
  schedule: { adjustForDST: false },
  scheduleStatus: { last: "", next: "", lastUpdated: "" },
};
