import type { QueueClient } from "@azure/storage-queue";
import type {
  MessageQueue,
  MessageReceipt,
  PeekedMessage,
  ReceivedMessage,
  SendOptions,
} from "../coordination/ports/ports.js";
import { storageFailure, toLibraryError } from "./storageErrors.js";
import { OnDemandCreation } from "./OnDemandCreation.js";
import type { Abortable } from "../library/util/delay.js";

/*
 * The queue body codec, shared by this adapter and the local Functions host (src/local/queueMessages.ts).
 */

/** Body encodings the Functions host understands (host.json `extensions.queues.messageEncoding`). */
export type MessageEncoding = "base64" | "none";

/**
 * Strict base64, as .NET's `Convert.FromBase64String` (the host's decoder) reads it: only the base64 alphabet, padding
 * only at the end, a length that is a multiple of 4 — what Node's lenient `Buffer.from(…, "base64")` would silently
 * skip or guess. (.NET also ignores whitespace; callers that want that strip it first.)
 */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** The bytes of strict base64 `text`; undefined when it is not strict base64. */
export function decodeBase64(text: string): Buffer | undefined {
  return BASE64.test(text) ? Buffer.from(text, "base64") : undefined;
}

/** Decodes a queue body; undefined when it is not valid in `encoding` (for base64: strict base64 of UTF-8 text). */
export function decodeBody(body: string, encoding: MessageEncoding): string | undefined {
  if (encoding === "none") return body;
  const bytes = decodeBase64(body);
  if (bytes === undefined) return undefined;
  const text = bytes.toString("utf8");
  return Buffer.from(text, "utf8").equals(bytes) ? text : undefined; // invalid UTF-8 inside valid base64
}

/** Encodes a UTF-8 body for `encoding`. */
export function encodeBody(text: string, encoding: MessageEncoding): string {
  return encoding === "base64" ? Buffer.from(text, "utf8").toString("base64") : text;
}

/**
 * The queue port on Azure Queue Storage, encoding bodies as the Functions host expects. Creates the queue on first
 * send.
 */
export class StorageQueue implements MessageQueue {
  private readonly creation = new OnDemandCreation(
    (options) => this.client.createIfNotExists(options),
    "QueueNotFound",
  );
  readonly name: string;

  constructor(
    private readonly client: QueueClient,
    private readonly encoding: MessageEncoding = "base64",
  ) {
    this.name = client.name;
  }

  async send(texts: readonly string[], options: SendOptions = {}): Promise<void> {
    const { abortSignal, visibilityDelayS } = options;
    const sendOne = (text: string): Promise<unknown> =>
      this.client.sendMessage(encodeBody(text, this.encoding), { abortSignal, visibilityTimeout: visibilityDelayS });
    try {
      await Promise.all(texts.map((text) => this.creation.run(() => sendOne(text), { abortSignal })));
    } catch (error) {
      throw toLibraryError(error, `Sending to queue ${this.name}`, abortSignal);
    }
  }

  async sendHidden(text: string, visibilityDelayS: number, options: Abortable = {}): Promise<MessageReceipt> {
    const { abortSignal } = options;
    try {
      // Put Message answers with the pop receipt that Update and Delete Message take, as Get Messages does.
      const sent = await this.creation.run(
        () =>
          this.client.sendMessage(encodeBody(text, this.encoding), {
            abortSignal,
            visibilityTimeout: visibilityDelayS,
          }),
        { abortSignal },
      );
      return { id: sent.messageId, popReceipt: sent.popReceipt };
    } catch (error) {
      throw toLibraryError(error, `Sending to queue ${this.name}`, abortSignal);
    }
  }

  async hide(
    message: MessageReceipt,
    visibilityTimeoutS: number,
    options: Abortable & { text?: string } = {},
  ): Promise<MessageReceipt | undefined> {
    const { abortSignal, text } = options;
    const body = text === undefined ? undefined : encodeBody(text, this.encoding);
    try {
      const updated = await this.client.updateMessage(message.id, message.popReceipt, body, visibilityTimeoutS, {
        abortSignal,
      });
      return updated.popReceipt === undefined ? undefined : { id: message.id, popReceipt: updated.popReceipt };
    } catch (error) {
      if (isNoLongerOurs(error)) return undefined;
      throw toLibraryError(error, `Hiding a message of queue ${this.name}`, abortSignal);
    }
  }

  async receive(max: number, visibilityTimeoutS: number, options: Abortable = {}): Promise<ReceivedMessage[]> {
    const { abortSignal } = options;
    try {
      const response = await this.client.receiveMessages({
        numberOfMessages: Math.min(32, Math.max(1, max)),
        visibilityTimeout: visibilityTimeoutS,
        abortSignal,
      });
      return response.receivedMessageItems.map((item) => ({
        id: item.messageId,
        popReceipt: item.popReceipt,
        dequeueCount: item.dequeueCount,
        text: decodeBody(item.messageText, this.encoding),
        rawText: item.messageText,
        // Storage's time of this receive is when the message becomes visible again, less the visibility it was given.
        queuedMs: item.nextVisibleOn.getTime() - visibilityTimeoutS * 1000 - item.insertedOn.getTime(),
      }));
    } catch (error) {
      if (storageFailure(error).code === "QueueNotFound") return [];
      throw toLibraryError(error, `Receiving from queue ${this.name}`, abortSignal);
    }
  }

  async peek(max: number, options: Abortable = {}): Promise<PeekedMessage[]> {
    const { abortSignal } = options;
    try {
      const response = await this.client.peekMessages({
        numberOfMessages: Math.min(32, Math.max(1, max)),
        abortSignal,
      });
      // Storage's time of this peek is the response's Date header (whole seconds, like insertedOn).
      const peekedAtMs = response.date?.getTime();
      return response.peekedMessageItems.map((item) => ({
        id: item.messageId,
        dequeueCount: item.dequeueCount,
        text: decodeBody(item.messageText, this.encoding),
        rawText: item.messageText,
        ...(peekedAtMs === undefined ? {} : { queuedMs: Math.max(0, peekedAtMs - item.insertedOn.getTime()) }),
      }));
    } catch (error) {
      if (storageFailure(error).code === "QueueNotFound") return [];
      throw toLibraryError(error, `Peeking at queue ${this.name}`, abortSignal);
    }
  }

  async release(message: Pick<ReceivedMessage, "id" | "popReceipt">, options: Abortable = {}): Promise<boolean> {
    const { abortSignal } = options;
    try {
      // No new body: the content stays as it is; only the visibility changes.
      await this.client.updateMessage(message.id, message.popReceipt, undefined, 0, { abortSignal });
      return true;
    } catch (error) {
      if (isNoLongerOurs(error)) return false;
      throw toLibraryError(error, `Releasing a message of queue ${this.name}`, abortSignal);
    }
  }

  async delete(message: Pick<ReceivedMessage, "id" | "popReceipt">, options: Abortable = {}): Promise<boolean> {
    const { abortSignal } = options;
    try {
      await this.client.deleteMessage(message.id, message.popReceipt, { abortSignal });
      return true;
    } catch (error) {
      if (isNoLongerOurs(error)) return false;
      throw toLibraryError(error, `Deleting a message from queue ${this.name}`, abortSignal);
    }
  }

  async approximateCount(options: Abortable = {}): Promise<number> {
    const { abortSignal } = options;
    try {
      return (await this.client.getProperties({ abortSignal })).approximateMessagesCount ?? 0;
    } catch (error) {
      if (storageFailure(error).code === "QueueNotFound") return 0;
      throw toLibraryError(error, `Reading the message count of queue ${this.name}`, abortSignal);
    }
  }
}

/**
 * A delete or update answered 404 (the message, or its queue, is gone) or 400 PopReceiptMismatch (its visibility
 * timeout ran out and someone received it again): the message is not ours to change any more.
 */
function isNoLongerOurs(error: unknown): boolean {
  const { statusCode, code } = storageFailure(error);
  return statusCode === 404 || (statusCode === 400 && code === "PopReceiptMismatch");
}
