import type { DequeuedMessageItem, QueueClient } from "@azure/storage-queue";
import { delay } from "azure-leader-coordinator/internal";
import { stringProperty, type TriggerBinding } from "./bindings.js";
import type { QueueSettings } from "./hostConfig.js";
import { failedBinding, type HostLogSink, type InvocationOutcome, type Invoker } from "./invoke.js";
import { MessageLease } from "./messageLease.js";
import { PollingBackoff } from "./pollingBackoff.js";
import type { QueueClients } from "./queueClients.js";
import { decodeMessageText, queueTriggerMetadata } from "./queueMessages.js";
import type { RegisteredFunction } from "./registrations.js";

/**
 * A queue trigger as the queues extension (5.x) runs it: fetch up to `batchSize` messages, fetch again when no more
 * than `newBatchThreshold` are still running, back off exponentially (from 100 ms, randomised, up to
 * `maxPollingInterval`: `pollingBackoff.ts`) while the queue is empty. On success the message is deleted; on failure
 * it becomes visible again after `visibilityTimeout`, and once its `dequeueCount` reaches `maxDequeueCount` it is
 * copied to `<queue>-poison` (body unchanged, so same encoding; no time-to-live given, so the service's default,
 * 7 days) and deleted. A body that fails base64 decoding goes to the poison queue at once without invoking the
 * function — the extension's MessageDecodingFailed handler does this (azure-sdk-for-net PR #18326), retrying cannot
 * fix it. A body that is base64 but not UTF-8 fails binding: a failed execution on every delivery, so it is poisoned
 * after maxDequeueCount. Each of these is a row of `npm run conformance:host`, measured on the real extension.
 */

/** Options of a {@link QueueListener}. */
export interface QueueListenerOptions {
  settings: QueueSettings;
  clients: QueueClients;
  invoke: Invoker;
  log: HostLogSink;
  env: Record<string, string | undefined>;
  /** Visibility timeout of received messages, renewed at half of it while the function runs. @default 600000 */
  messageLeaseMs?: number;
}

/** Runs one queue-triggered function until stopped. */
export class QueueListener {
  private readonly controller = new AbortController();
  private readonly running = new Set<Promise<void>>();
  private readonly queue: QueueClient;
  private readonly poisonQueue: QueueClient;
  private readonly queueName: string;
  private loop: Promise<void> | undefined;
  private missingQueueReported = false;

  constructor(
    private readonly fn: RegisteredFunction,
    trigger: TriggerBinding,
    private readonly options: QueueListenerOptions,
  ) {
    const name = fn.metadata.name;
    const queueName = stringProperty(trigger.binding, "queueName", options.env, name);
    if (queueName === undefined) throw new Error(`Function "${name}": queue trigger has no queueName.`);
    const connection = stringProperty(trigger.binding, "connection", options.env, name);
    this.queueName = queueName;
    this.queue = options.clients.queue(connection, queueName, name);
    this.poisonQueue = options.clients.queue(connection, `${queueName}-poison`, name);
  }

  /** Starts polling. */
  start(): void {
    this.loop ??= this.poll(this.controller.signal);
  }

  /** Stops polling and waits for running invocations to finish and their messages to be settled. */
  async stop(): Promise<void> {
    this.controller.abort();
    await this.loop;
    await Promise.all(this.running);
  }

  private async poll(signal: AbortSignal): Promise<void> {
    const { batchSize, newBatchThreshold, maxPollingIntervalMs } = this.options.settings;
    // At least 1 s: a visibility timeout of 0 would hand the message to every other poller at once.
    const leaseSeconds = Math.max(1, Math.round((this.options.messageLeaseMs ?? 600_000) / 1000));
    const backoff = new PollingBackoff(maxPollingIntervalMs);
    while (!signal.aborted) {
      if (this.running.size > newBatchThreshold) {
        await this.slotFreed(signal);
        continue;
      }
      const messages = await this.receive(batchSize, leaseSeconds, signal);
      if (messages.length === 0) {
        try {
          await delay(backoff.next(false), { abortSignal: signal });
        } catch {
          return;
        }
        continue;
      }
      backoff.next(true);
      for (const message of messages) {
        const processing = this.process(message).finally(() => {
          this.running.delete(processing);
          this.onSlotFreed?.();
        });
        this.running.add(processing);
      }
    }
  }

  /** Resolves the wait of {@link slotFreed}, if one is pending. */
  private onSlotFreed: (() => void) | undefined;

  /**
   * Waits until a running invocation finishes or `signal` aborts. Each wait is a fresh promise that nothing keeps
   * afterwards (racing a promise that lives until stop instead kept a reaction per wait: a slow leak over long runs).
   */
  private slotFreed(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener("abort", done);
        this.onSlotFreed = undefined;
        resolve();
      };
      if (signal.aborted) {
        done();
        return;
      }
      this.onSlotFreed = done;
      signal.addEventListener("abort", done, { once: true });
    });
  }

  private async receive(batchSize: number, leaseSeconds: number, signal: AbortSignal): Promise<DequeuedMessageItem[]> {
    try {
      const response = await this.queue.receiveMessages({
        numberOfMessages: batchSize,
        visibilityTimeout: leaseSeconds,
        abortSignal: signal,
      });
      this.missingQueueReported = false;
      return response.receivedMessageItems;
    } catch (error) {
      if (signal.aborted) return [];
      // The host keeps polling a queue that does not exist yet; report it once, not on every poll.
      const missing = (error as { statusCode?: number }).statusCode === 404;
      if (!missing || !this.missingQueueReported) {
        this.options.log({
          level: "warning",
          category: "host",
          functionName: this.fn.metadata.name,
          message: `Polling queue '${this.queueName}' failed: ${(error as Error).message}`,
        });
      }
      this.missingQueueReported ||= missing;
      return [];
    }
  }

  private async process(message: DequeuedMessageItem): Promise<void> {
    const { settings, log } = this.options;
    const functionName = this.fn.metadata.name;
    const lease = new MessageLease(this.queue, message, this.options.messageLeaseMs ?? 600_000, log);
    try {
      if (message.dequeueCount > settings.maxDequeueCount) {
        await lease.stop();
        await this.moveToPoison(
          message,
          lease.popReceipt,
          `Message has reached MaxDequeueCount of ${settings.maxDequeueCount}.`,
        );
        return;
      }
      const decoded = decodeMessageText(message.messageText, settings.messageEncoding);
      if (!decoded.ok && decoded.failure === "decoding") {
        await lease.stop();
        await this.moveToPoison(
          message,
          lease.popReceipt,
          `Message ${message.messageId} could not be decoded: ${decoded.reason}`,
        );
        return;
      }
      const reason = `New queue message detected on '${this.queueName}'.`;
      const outcome: InvocationOutcome = decoded.ok
        ? await this.options.invoke(this.fn, {
            data: { string: decoded.text },
            metadata: queueTriggerMetadata(message, decoded.text, lease.popReceipt, functionName),
            reason,
          })
        : failedBinding(this.fn, reason, decoded.reason, log);
      await lease.stop();
      if (outcome.ok) {
        await this.queue.deleteMessage(message.messageId, lease.popReceipt);
      } else if (message.dequeueCount >= settings.maxDequeueCount) {
        await this.moveToPoison(
          message,
          lease.popReceipt,
          `Message has reached MaxDequeueCount of ${settings.maxDequeueCount}.`,
        );
      } else {
        await this.queue.updateMessage(
          message.messageId,
          lease.popReceipt,
          undefined,
          Math.round(settings.visibilityTimeoutMs / 1000),
        );
      }
    } catch (error) {
      // Settling failed (storage trouble): the message reappears when its visibility lapses, as in Azure.
      log({
        level: "error",
        category: "host",
        functionName,
        message: `Could not settle message ${message.messageId} on '${this.queueName}': ${(error as Error).message}`,
      });
    } finally {
      await lease.stop();
    }
  }

  private async moveToPoison(message: DequeuedMessageItem, popReceipt: string, why: string): Promise<void> {
    this.options.log({
      level: "warning",
      category: "host",
      functionName: this.fn.metadata.name,
      message: `${why} Moving message to queue '${this.poisonQueue.name}'.`,
    });
    try {
      await this.poisonQueue.createIfNotExists();
    } catch {
      // Best effort, as in the host: several instances may race to create it, and the send below reports real trouble.
    }
    // No time-to-live, as the host sends it: the service's default applies, 7 days (conformance row queue.poison-ttl).
    await this.poisonQueue.sendMessage(message.messageText);
    await this.queue.deleteMessage(message.messageId, popReceipt);
  }
}
