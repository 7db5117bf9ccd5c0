import { app, type InvocationContext, type Timer, type TimerFunctionOptions } from "@azure/functions";
import { getCoordinatorApp } from "../src/app/context";
import { runCoordinatorTick } from "../src/app/operations";
import { processShutdown } from "../src/app/shutdown";
import { getTelemetry } from "../src/app/telemetry/setupTelemetry";
import { sinkFor } from "./invocation";

/**
 * Each tick makes one attempt to lead; the leader runs the coordination step within its budget. The tick runs under
 * the process's shutdown signal (fired by the appTerminate hook in `hooks.ts`), which waits for it to release.
 */
export async function coordinatorHandler(timer: Timer, context: InvocationContext): Promise<void> {
  if (timer.isPastDue) context.warn("Coordinator tick is past due (the app was idle or busy); running it now.");
  const sink = sinkFor(context);
  await processShutdown.track(() =>
    runCoordinatorTick(getCoordinatorApp(), sink, { abortSignal: processShutdown.signal }),
  );
  // Queue depths and fold lag, once a tick whoever leads (telemetry only).
  await getTelemetry().sampleQueues(getCoordinatorApp(), sink, { abortSignal: processShutdown.signal });
}

/** Registration options: schedule from the COORDINATOR_SCHEDULE app setting (NCRONTAB, seconds first). */
export const coordinatorOptions: TimerFunctionOptions = {
  schedule: "%COORDINATOR_SCHEDULE%",
  handler: coordinatorHandler,
};

app.timer("coordinator", coordinatorOptions);
