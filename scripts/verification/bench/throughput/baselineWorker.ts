import type { DequeuedMessageItem } from "@azure/storage-queue";
import { createStorageClients, DEFAULT_PIPELINE_OPTIONS } from "../../../../src/azure/clients";
import { decodeBody, encodeBody } from "../../../../src/azure/StorageQueue";
import { delay, withJitter } from "../../../../src/library/util/delay";
import {
  BASELINE_BATCH_SIZE,
  BASELINE_NEW_BATCH_THRESHOLD,
  BASELINE_VISIBILITY_S,
  formatWorkerLine,
  pollDelaysMs,
} from "./baselineProtocol";
import { baselineUnitResult } from "./baselineUnit";
import { countProcessRequests } from "./requestCounter";

/**
 * One baseline worker process: the raw storage SDKs doing what the app's worker does, and nothing else — receive
 * work in batches of 16 (fetching again once no more than 8 are still running, as the host does), read each input
 * blob an item names, `groupRecords` each item and merge a unit's partials, send one result per message,
 * delete the work message. The same back-off as the host while the queue is empty. No host, no leadership, no state.
 *
 * Environment: BASELINE_STORAGE (connection string), BASELINE_WORK_QUEUE, BASELINE_RESULTS_QUEUE,
 * BASELINE_INPUT_CONTAINER, BASELINE_REQUEST_COUNTS_FILE (count its storage requests there). Prints protocol lines
 * (./baselineProtocol.ts); stops on SIGTERM or when stdin closes.
 */

function setting(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === "") throw new Error(`${name} is not set.`);
  return value;
}

async function main(): Promise<void> {
  const connectionString = setting("BASELINE_STORAGE");
  countProcessRequests(setting("BASELINE_REQUEST_COUNTS_FILE"), "baseline-worker", connectionString);
  const clients = createStorageClients({ kind: "connectionString", connectionString }, DEFAULT_PIPELINE_OPTIONS);
  const work = clients.queue.getQueueClient(setting("BASELINE_WORK_QUEUE"));
  const results = clients.queue.getQueueClient(setting("BASELINE_RESULTS_QUEUE"));
  const inputs = clients.blob.getContainerClient(setting("BASELINE_INPUT_CONTAINER"));
  const controller = new AbortController();
  /** A function, not the property: TypeScript would keep a checked `aborted` narrowed across awaits. */
  const stopping = (): boolean => controller.signal.aborted;
  const stop = (): void => controller.abort();
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  process.stdin.once("end", stop);
  process.stdin.resume();

  let processed = 0;
  let failed = 0;
  const running = new Set<Promise<void>>();

  async function readInput(input: { inline: string } | { blob: string }): Promise<string> {
    if ("inline" in input) return input.inline;
    const response = await inputs.getBlobClient(input.blob).download();
    const stream = response.readableStreamBody;
    if (stream === undefined) return "";
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
    return Buffer.concat(chunks).toString("utf8");
  }

  async function handle(item: DequeuedMessageItem): Promise<void> {
    try {
      const text = decodeBody(item.messageText, "base64");
      if (text === undefined) throw new Error(`message ${item.messageId} is not base64`);
      const result = await baselineUnitResult(text, readInput);
      await results.sendMessage(encodeBody(JSON.stringify(result), "base64"));
      await work.deleteMessage(item.messageId, item.popReceipt);
      processed++;
    } catch (error) {
      // Left to reappear after its visibility timeout, as the host would; counted so the benchmark can say so.
      failed++;
      process.stderr.write(`baseline worker: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }

  process.stdout.write(formatWorkerLine({ kind: "ready", pid: process.pid }));
  const delays = pollDelaysMs();
  while (!controller.signal.aborted) {
    if (running.size > BASELINE_NEW_BATCH_THRESHOLD) {
      await Promise.race(running);
      continue;
    }
    let received: DequeuedMessageItem[] = [];
    try {
      received = (
        await work.receiveMessages({
          numberOfMessages: BASELINE_BATCH_SIZE,
          visibilityTimeout: BASELINE_VISIBILITY_S,
          abortSignal: controller.signal,
        })
      ).receivedMessageItems;
    } catch (error) {
      if (!stopping())
        process.stderr.write(
          `baseline worker: receive failed: ${error instanceof Error ? error.message : String(error)}\n`,
        );
    }
    if (received.length === 0) {
      try {
        await delay(withJitter(delays.next(), 0.2), { abortSignal: controller.signal });
      } catch {
        break;
      }
      continue;
    }
    delays.reset();
    for (const item of received) {
      const task = handle(item).finally(() => running.delete(task));
      running.add(task);
    }
  }
  await Promise.all(running);
  process.stdout.write(formatWorkerLine({ kind: "stopped", pid: process.pid, processed, failed }), () =>
    process.exit(0),
  );
}

main().catch((error: unknown) => {
  process.stderr.write(
    `baseline worker failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exit(1);
});
