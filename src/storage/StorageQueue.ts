import type { QueueClient } from "@azure/storage-queue";
import type { MessageQueue, PortOptions, ReceivedMessage } from "../coordination/ports";
import { storageFailure, toLibraryError } from "./storageErrors";
import { OnDemandCreation } from "./OnDemandCreation";

/** Body encodings the Functions host understands (host.json `extensions.queues.messageEncoding`). */
export type MessageEncoding = "base64" | "none";

/** Strict base64: the host's decoder rejects what Node's lenient `Buffer.from(…, "base64")` would silently skip. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Decodes a queue body; undefined when it is not valid in `encoding`. */
export function decodeBody(body: string, encoding: MessageEncoding): string | undefined {
  if (encoding === "none") return body;
  if (!BASE64.test(body)) return undefined;
  const bytes = Buffer.from(body, "base64");
  const text = bytes.toString("utf8");
  return Buffer.from(text, "utf8").equals(bytes) ? text : undefined; // invalid UTF-8 inside valid base64
}

/** Encodes a UTF-8 body for `encoding`. */
export function encodeBody(text: string, encoding: MessageEncoding): string {
  return encoding === "base64" ? Buffer.from(text, "utf8").toString("base64") : text;
}

/** The queue port on Azure Queue Storage, encoding bodies as the Functions host expects. Creates the queue on first send. */
export class StorageQueue implements MessageQueue {
  private readonly creation = new OnDemandCreation((options) => this.client.createIfNotExists(options));
  readonly name: string;

  constructor(
    private readonly client: QueueClient,
    private readonly encoding: MessageEncoding = "base64",
  ) {
    this.name = client.name;
  }

  async send(texts: readonly string[], options: PortOptions = {}): Promise<void> {
    const { abortSignal } = options;
    const sendOne = (text: string): Promise<unknown> => this.client.sendMessage(encodeBody(text, this.encoding), { abortSignal });
    try {
      await Promise.all(
        texts.map((text) =>
          sendOne(text).catch(async (error: unknown) => {
            if (storageFailure(error).code !== "QueueNotFound") throw error;
            await this.creation.ensure({ abortSignal });
            return sendOne(text);
          }),
        ),
      );
    } catch (error) {
      throw toLibraryError(error, `Sending to queue ${this.name}`, abortSignal);
    }
  }

  async receive(max: number, visibilityTimeoutS: number, options: PortOptions = {}): Promise<ReceivedMessage[]> {
    const { abortSignal } = options;
    try {
      const response = await this.client.receiveMessages({ numberOfMessages: Math.min(32, Math.max(1, max)), visibilityTimeout: visibilityTimeoutS, abortSignal });
      return response.receivedMessageItems.map((item) => ({
        id: item.messageId,
        popReceipt: item.popReceipt,
        dequeueCount: item.dequeueCount,
        text: decodeBody(item.messageText, this.encoding),
        rawText: item.messageText,
      }));
    } catch (error) {
      if (storageFailure(error).code === "QueueNotFound") return [];
      throw toLibraryError(error, `Receiving from queue ${this.name}`, abortSignal);
    }
  }

  async delete(message: Pick<ReceivedMessage, "id" | "popReceipt">, options: PortOptions = {}): Promise<void> {
    const { abortSignal } = options;
    try {
      await this.client.deleteMessage(message.id, message.popReceipt, { abortSignal });
    } catch (error) {
      // 404: already deleted, or its pop receipt expired and someone else has it now (it will be folded as a duplicate).
      if (storageFailure(error).statusCode === 404) return;
      throw toLibraryError(error, `Deleting a message from queue ${this.name}`, abortSignal);
    }
  }

  async approximateCount(options: PortOptions = {}): Promise<number> {
    const { abortSignal } = options;
    try {
      return (await this.client.getProperties({ abortSignal })).approximateMessagesCount ?? 0;
    } catch (error) {
      if (storageFailure(error).code === "QueueNotFound") return 0;
      throw toLibraryError(error, `Reading the message count of queue ${this.name}`, abortSignal);
    }
  }
}
