import { app, type InvocationContext, type StorageQueueFunctionOptions } from "@azure/functions";
import { CONNECTION_SETTINGS } from "../src/app/settings";
import { getCoordinatorApp } from "../src/app/context";
import { handleWakeMessage } from "../src/app/operations";
import { processShutdown } from "../src/app/shutdown";
import { deliveryOf, sinkFor } from "./invocation";

/**
 * A wake-up (sent by each submission): ONE leadership attempt and, if it wins, one coordination step — the timer
 * tick's code path, under the same shutdown signal. Not acquired, or already running here: the message is consumed.
 */
export async function wakeHandler(payload: unknown, context: InvocationContext): Promise<void> {
  const delivery = deliveryOf(context);
  const outcome = await processShutdown.track(() =>
    handleWakeMessage(getCoordinatorApp(), sinkFor(context), payload, {
      dequeueCount: delivery.dequeueCount,
      abortSignal: processShutdown.signal,
    }),
  );
  context.debug(`Wake-up ${delivery.id}: ${outcome}`);
}

/** Registration options: the control queue (WAKE_QUEUE app setting) on the coordination storage account. */
export const wakeOptions: StorageQueueFunctionOptions = {
  queueName: "%WAKE_QUEUE%",
  connection: CONNECTION_SETTINGS.coordination,
  handler: wakeHandler,
};

app.storageQueue("wake", wakeOptions);
