import { app, type InvocationContext, type StorageQueueFunctionOptions } from "@azure/functions";
import { CONNECTION_SETTINGS } from "../src/config/settings";
import { getCoordinatorApp } from "../src/app/context";
import { handleWorkMessage } from "../src/app/operations";
import { sinkFor } from "./sink";

/** Processes one work item and reports its result; retry and poison follow host.json `extensions.queues`. */
export async function workerHandler(payload: unknown, context: InvocationContext): Promise<void> {
  const metadata = context.triggerMetadata ?? {};
  const dequeueCount = typeof metadata.dequeueCount === "number" ? metadata.dequeueCount : Number(metadata.dequeueCount ?? 1);
  const id = typeof metadata.id === "string" ? metadata.id : context.invocationId;
  const outcome = await handleWorkMessage(getCoordinatorApp(), sinkFor(context), payload, { id, dequeueCount: Number.isFinite(dequeueCount) ? dequeueCount : 1 });
  context.debug(`Work message ${id}: ${outcome.status}`);
}

/** Registration options: the work queue (WORK_QUEUE app setting) on the coordination storage account. */
export const workerOptions: StorageQueueFunctionOptions = {
  queueName: "%WORK_QUEUE%",
  connection: CONNECTION_SETTINGS.coordination,
  handler: workerHandler,
};

app.storageQueue("worker", workerOptions);
