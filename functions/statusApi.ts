import { randomBytes } from "node:crypto";
import { app, type HttpFunctionOptions, type HttpResponseInit } from "@azure/functions";
import { getCoordinatorApp } from "../src/app/context";
import { getStatusPage } from "../src/app/operations";

/**
 * GET /api/status: one self-contained HTML page — who leads, the recent terms, jobs with progress, failures, poison
 * queue depths — that refreshes itself. Function key as for the other routes; from a browser, `?code=<key>` (the page
 * refreshes from its own URL, so the key goes along).
 */
export async function getStatusHandler(): Promise<HttpResponseInit> {
  const page = await getStatusPage(getCoordinatorApp(), { nonce: randomBytes(16).toString("base64") });
  return { status: 200, headers: page.headers, body: page.html };
}

export const getStatusOptions: HttpFunctionOptions = {
  methods: ["GET"],
  authLevel: "function",
  route: "status",
  handler: getStatusHandler,
};

app.http("getStatus", getStatusOptions);
