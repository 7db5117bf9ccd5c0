import { app, type InvocationContext, type StorageQueueFunctionOptions } from "@azure/functions";
import { CONNECTION_SETTINGS } from "../src/app/settings";
import { getCoordinatorApp } from "../src/app/context";
import { handleWorkMessage } from "../src/app/operations";
import { getTelemetry } from "../src/app/telemetry/setupTelemetry";
import { deliveryOf, sinkFor } from "./invocation";

/** Processes one work item and reports its result; retry and poison follow host.json `extensions.queues`. */
export async function workerHandler(payload: unknown, context: InvocationContext): Promise<void> {
  const delivery = deliveryOf(context);
  const outcome = await handleWorkMessage(getCoordinatorApp(), sinkFor(context), payload, delivery);
  getTelemetry().recordWork(outcome);
  context.debug(`Work message ${delivery.id}: ${outcome.status}`);
}

/** Registration options: the work queue (WORK_QUEUE app setting) on the coordination storage account. */
export const workerOptions: StorageQueueFunctionOptions = {
  queueName: "%WORK_QUEUE%",
  connection: CONNECTION_SETTINGS.coordination,
  handler: workerHandler,
};

app.storageQueue("worker", workerOptions);
