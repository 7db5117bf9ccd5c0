import { notMeasuredRow, type Row } from "../rows";
import type { Scenario } from "../scenario";

/**
 * The claims of docs/LOCAL-HOST.md this harness cannot measure: they are the Functions host's or its Node worker's,
 * not the WebJobs SDK's, and neither runs here (Core Tools cannot be installed; the host is not on NuGet in a form that
 * runs). Listed so the report says so, rather than leaving them out, with the local test that covers each, if any.
 */
const CLAIMS: readonly [string, string, string][] = [
  [
    "worker.node-flags",
    "languageWorkers__node__arguments goes on the Node worker's command line",
    "the Functions host starts the Node worker; the SDK has no workers (no test of the local host's command line either)",
  ],
  [
    "worker.registrations",
    "Registrations and hooks are captured as the Node worker captures them (appStart, appTerminate)",
    "the Node worker's protocol, not in the SDK (test/local/appHooks.test.ts, host.test.ts)",
  ],
  [
    "worker.invocations",
    "Trigger data and metadata reach the handler through @azure/functions' own invocation model",
    "the worker's RPC conversion, not in the SDK; the rows bind the same message text and metadata on both sides",
  ],
  [
    "host.host-id",
    "The app's host id is AzureFunctionsWebHost__hostid, else WEBSITE_SITE_NAME shortened as the host does",
    "the Functions host derives it; the SDK takes what it is given (UseHostId) (test/local/hostParts.test.ts)",
  ],
  [
    "timer.time-zone",
    "WEBSITE_TIME_ZONE sets the schedule's time zone",
    "the Functions host maps it to the process's zone; both sides here run in UTC",
  ],
  [
    "http.routes",
    "HTTP triggers: /<routePrefix>/<route>, route parameters, 204 without a return, 500 on a throw",
    "the Functions host's ASP.NET pipeline, not in the SDK (test/local/host.test.ts)",
  ],
  [
    "queue.output-arrays",
    "An output binding given an array writes one message per element",
    "the Node worker's output conversion; the SDK's .NET bindings take a collector instead (no local test of it either)",
  ],
];

export const claimsScenario: Scenario = {
  name: "claims",
  quick: true,
  run: (): Promise<Row[]> => Promise.resolve(CLAIMS.map(([id, claim, why]) => notMeasuredRow(id, claim, why))),
};
