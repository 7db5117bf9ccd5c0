import type { CoordinatorApp, Sink } from "../../src/app/context";
import { handleWorkMessage } from "../../src/app/operations";

/**
 * Plays the Functions host's queue trigger for a batch: receive, decode, handle, delete on success. Returns how many
 * were handled.
 */
export async function drainWorkQueue(app: CoordinatorApp, sink: Sink, max = 32): Promise<number> {
  const messages = await app.workQueue.receive(max, 30);
  for (const message of messages) {
    const payload: unknown = message.text === undefined ? message.rawText : tryJson(message.text);
    await handleWorkMessage(app, sink, payload, { id: message.id, dequeueCount: message.dequeueCount });
    await app.workQueue.delete(message);
  }
  return messages.length;
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
