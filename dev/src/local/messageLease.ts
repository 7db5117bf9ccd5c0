import type { DequeuedMessageItem, QueueClient } from "@azure/storage-queue";
import { delay } from "azure-leader-coordinator/internal";
import type { HostLogSink } from "./invoke.js";

/**
 * Keeps a received message invisible while its function runs, as the host does: it receives with a long visibility
 * timeout (10 min) and extends it at half that period, so a long invocation never lets the message reappear for
 * another instance. Each extension returns a new pop receipt, which later deletes/updates must use.
 */
export class MessageLease {
  private readonly controller = new AbortController();
  private readonly loop: Promise<void>;
  /** The latest pop receipt. */
  popReceipt: string;

  constructor(
    private readonly queue: QueueClient,
    private readonly message: DequeuedMessageItem,
    private readonly visibilityMs: number,
    private readonly log: HostLogSink,
  ) {
    this.popReceipt = message.popReceipt;
    this.loop = this.renew(this.controller.signal);
  }

  /** Stops renewing and waits for a renewal in flight, so the pop receipt is current. */
  async stop(): Promise<void> {
    this.controller.abort();
    await this.loop;
  }

  private async renew(signal: AbortSignal): Promise<void> {
    const seconds = Math.max(1, Math.round(this.visibilityMs / 1000));
    while (!signal.aborted) {
      try {
        await delay(this.visibilityMs / 2, { abortSignal: signal });
      } catch {
        return;
      }
      try {
        // No abortSignal here on purpose: an update cut short may have changed the pop receipt on the server.
        const response = await this.queue.updateMessage(this.message.messageId, this.popReceipt, undefined, seconds);
        if (response.popReceipt !== undefined) this.popReceipt = response.popReceipt;
      } catch (error) {
        this.log({
          level: "warning",
          category: "host",
          message: `Could not extend visibility of message ${this.message.messageId} on '${this.queue.name}': ${(error as Error).message}`,
        });
      }
    }
  }
}
