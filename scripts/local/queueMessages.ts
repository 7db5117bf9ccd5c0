import { randomUUID } from "node:crypto";
import type { DequeuedMessageItem } from "@azure/storage-queue";
import type { RpcTypedData } from "./coreApi";

/** Decoding queue messages and describing them to the function as the queues extension (5.x) does. */

/** A decoded message body, or why it could not be decoded. */
export type DecodedMessage = { ok: true; text: string } | { ok: false; reason: string };

/**
 * Decodes a message body per host.json `messageEncoding`. Base64 is strict like .NET's `Convert.FromBase64String`
 * (whitespace ignored, only the base64 alphabet, padding only at the end, length a multiple of 4); the Storage SDK
 * for JS sends text as-is, so a producer that forgets to encode gets a decoding failure here, as in Azure.
 */
export function decodeMessageText(messageText: string, encoding: "base64" | "none"): DecodedMessage {
  if (encoding === "none") return { ok: true, text: messageText };
  const compact = messageText.replace(/[ \t\r\n]/g, "");
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
    return { ok: false, reason: "The input is not a valid Base-64 string (host.json extensions.queues.messageEncoding is \"base64\")." };
  }
  return { ok: true, text: Buffer.from(compact, "base64").toString("utf8") };
}

/** Encodes a message body for the queue per `messageEncoding` (for output bindings). */
export function encodeMessageText(text: string, encoding: "base64" | "none"): string {
  return encoding === "base64" ? Buffer.from(text, "utf8").toString("base64") : text;
}

/**
 * The trigger metadata the host sends with a queue message. Keys are PascalCase and DateTimeOffsets are JSON
 * strings, as on the wire; the library camel-cases the keys and JSON-parses the values, so the handler sees
 * `dequeueCount`, `id`, `insertionTime`, `expirationTime`, `nextVisibleTime`, `popReceipt`, `queueTrigger`, `sys`.
 */
export function queueTriggerMetadata(message: DequeuedMessageItem, text: string, popReceipt: string, functionName: string): Record<string, RpcTypedData> {
  return {
    QueueTrigger: { string: text },
    DequeueCount: { int: message.dequeueCount },
    Id: { string: message.messageId },
    PopReceipt: { string: popReceipt },
    InsertionTime: { json: JSON.stringify(dateTimeOffset(message.insertedOn)) },
    ExpirationTime: { json: JSON.stringify(dateTimeOffset(message.expiresOn)) },
    NextVisibleTime: { json: JSON.stringify(dateTimeOffset(message.nextVisibleOn)) },
    sys: { json: JSON.stringify({ MethodName: functionName, UtcNow: dateTimeOffset(new Date()), RandGuid: randomUUID() }) },
  };
}

/** A UTC time as .NET serialises a DateTimeOffset: `2024-05-01T12:00:00+00:00`. */
function dateTimeOffset(date: Date): string {
  return date.toISOString().replace(/\.000Z$/, "+00:00").replace(/Z$/, "+00:00");
}
