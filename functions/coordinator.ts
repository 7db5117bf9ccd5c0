import { app, type InvocationContext, type Timer, type TimerFunctionOptions } from "@azure/functions";
import { getCoordinatorApp } from "../src/app/context";
import { runCoordinatorTick } from "../src/app/operations";
import { sinkFor } from "./sink";

/** Each tick makes one attempt to lead; the leader runs the coordination step within its budget. */
export async function coordinatorHandler(timer: Timer, context: InvocationContext): Promise<void> {
  if (timer.isPastDue) context.warn("Coordinator tick is past due (the app was idle or busy); running it now.");
  await runCoordinatorTick(getCoordinatorApp(), sinkFor(context));
}

/** Registration options: schedule from the COORDINATOR_SCHEDULE app setting (NCRONTAB, seconds first). */
export const coordinatorOptions: TimerFunctionOptions = {
  schedule: "%COORDINATOR_SCHEDULE%",
  handler: coordinatorHandler,
};

app.timer("coordinator", coordinatorOptions);
