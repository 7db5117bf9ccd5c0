import type { InvocationContext, Timer } from "@azure/functions";
import type { CoordinatorApp } from "../app/context.js";
import { handleWakeMessage, handleWorkMessage, runCoordinatorTick } from "../app/operations.js";
import { processShutdown } from "../app/shutdown.js";
import { getTelemetry } from "../app/telemetry/setupTelemetry.js";
import { deliveryOf, sinkFor } from "./invocation.js";

/** The app of one registration, built on first use (registering connects to nothing). */
export type AppSource = () => CoordinatorApp;

/**
 * The timer: each tick makes one attempt to lead, and the leader runs the coordination step within its budget. The
 * tick runs under the process's shutdown signal (fired by the appTerminate hook), which waits for it to release.
 */
export function coordinatorHandler(app: AppSource, notice: (context: InvocationContext) => void = () => undefined) {
  return async (timer: Timer, context: InvocationContext): Promise<void> => {
    // The first tick of the process says what the app's host.json lacks (hostJsonNotice.ts).
    notice(context);
    if (timer.isPastDue) context.warn("Coordinator tick is past due (the app was idle or busy); running it now.");
    const sink = sinkFor(context);
    await processShutdown.track(() => runCoordinatorTick(app(), sink, { abortSignal: processShutdown.signal }));
    // Queue depths and fold lag, once a tick whoever leads (telemetry only).
    await getTelemetry().sampleQueues(app(), sink, { abortSignal: processShutdown.signal });
  };
}

/**
 * The worker: one work unit's items through their task kind, then its result to the leader; retries and poison follow
 * host.json `extensions.queues`. Runs under the process's shutdown signal: a unit cut short is delivered again.
 */
export function workerHandler(app: AppSource) {
  return async (payload: unknown, context: InvocationContext): Promise<void> => {
    const delivery = deliveryOf(context);
    const outcome = await processShutdown.track(() =>
      handleWorkMessage(app(), sinkFor(context), payload, delivery, { abortSignal: processShutdown.signal }),
    );
    getTelemetry().recordWork(outcome);
    // Items that failed are the user's to see (their reasons also go to the job's status); the rest is routine.
    if (outcome.status === "failed")
      context.warn(
        `Work message ${delivery.id}: ${outcome.itemsFailed} of ${outcome.count} items failed: ${outcome.reason.slice(0, 500)}`,
      );
    else context.debug(`Work message ${delivery.id}: ${outcome.status}`);
  };
}

/**
 * A wake-up (sent by each submission and by queue activity): ONE leadership attempt and, if it wins, one coordination
 * step — the timer tick's code path, under the same shutdown signal. Not acquired, or already running here: the
 * message is consumed.
 */
export function wakeHandler(app: AppSource) {
  return async (payload: unknown, context: InvocationContext): Promise<void> => {
    const delivery = deliveryOf(context);
    const outcome = await processShutdown.track(() =>
      handleWakeMessage(app(), sinkFor(context), payload, {
        dequeueCount: delivery.dequeueCount,
        abortSignal: processShutdown.signal,
      }),
    );
    context.debug(`Wake-up ${delivery.id}: ${outcome}`);
  };
}

/**
 * How long the terminate hook waits for running ticks to stop and release their lease, in ms: a renewal in flight plus
 * a release, each bounded by the 3 s request timeout, with room to spare. A lease not released by then expires.
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
