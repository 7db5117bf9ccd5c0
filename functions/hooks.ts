import { app } from "@azure/functions";
import { processShutdown } from "../src/app/shutdown";
import { getTelemetry } from "../src/app/telemetry/setupTelemetry";

/**
 * How long the hook waits for running ticks to stop and release their lease, in ms: a renewal in flight plus a
 * release, each bounded by the 3 s request timeout, with room to spare. A lease not released by then expires by itself.
 */
export const SHUTDOWN_WAIT_MS = 10_000;

/**
 * Graceful shutdown (deploys, scale-in, the "Recreate" site-update strategy): fires the process's shutdown signal, so
 * a leader aborts its step with reason "shutdown" and releases the lease at once, and waits for that. Node functions
 * get no cancellation token (azure-functions-nodejs-library#273); this hook is the only notice the worker gives.
 */
export async function appTerminateHandler(): Promise<void> {
  await processShutdown.shutdown({ timeoutMs: SHUTDOWN_WAIT_MS });
  // What telemetry still buffers (records, the metrics of the last interval) is exported before the process ends.
  await getTelemetry().shutdown();
}

app.hook.appTerminate(appTerminateHandler);
