import { randomUUID } from "node:crypto";
import type { DequeuedMessageItem } from "@azure/storage-queue";
import { decodeBase64, type MessageEncoding } from "azure-leader-coordinator/internal";
import type { RpcTypedData } from "./coreApi.js";

/** Decoding queue messages and describing them to the function as the queues extension (5.x) does. */

/**
 * A decoded message body, or why not: `decoding` (not base64: the queues extension poisons it at once, without
 * running the function) or `binding` (not UTF-8: the host fails to bind it to a string, an execution that failed, on
 * every delivery until maxDequeueCount).
 */
export type DecodedMessage =
  { ok: true; text: string } | { ok: false; failure: "decoding" | "binding"; reason: string };

/** Refuses what is not UTF-8, as .NET's strict UTF-8 encoding does (a replacement character would hide it). */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Decodes a message body per host.json `messageEncoding`, with the adapter's codec (`src/azure/StorageQueue.ts`).
 * Base64 is strict like .NET's `Convert.FromBase64String` (whitespace ignored, only the base64 alphabet, padding only
 * at the end, length a multiple of 4); the Storage SDK for JS sends text as-is, so a producer that forgets to encode
 * gets a decoding failure here, as in Azure. Bytes that are not UTF-8 fail binding to a string, as in the host
 * (measured on the WebJobs SDK by `npm run conformance:host`, row `queue.not-utf8`). Encoding (for output bindings)
 * is the adapter's `encodeBody`.
 */
export function decodeMessageText(messageText: string, encoding: MessageEncoding): DecodedMessage {
  if (encoding === "none") return { ok: true, text: messageText };
  const bytes = decodeBase64(messageText.replace(/[ \t\r\n]/g, ""));
  if (bytes === undefined)
    return {
      ok: false,
      failure: "decoding",
      reason: 'The input is not a valid Base-64 string (host.json extensions.queues.messageEncoding is "base64").',
    };
  try {
    return { ok: true, text: STRICT_UTF8.decode(bytes) };
  } catch {
    return {
      ok: false,
      failure: "binding",
      reason: "The message body is not valid UTF-8, so it cannot be bound to a string.",
    };
  }
}

/**
 * The trigger metadata the host sends with a queue message. Keys are PascalCase and DateTimeOffsets are JSON
 * strings, as on the wire; the library camel-cases the keys and JSON-parses the values, so the handler sees
 * `dequeueCount`, `id`, `insertionTime`, `expirationTime`, `nextVisibleTime`, `popReceipt`, `queueTrigger`, `sys`.
 */
export function queueTriggerMetadata(
  message: DequeuedMessageItem,
  text: string,
  popReceipt: string,
  functionName: string,
): Record<string, RpcTypedData> {
  return {
    QueueTrigger: { string: text },
    DequeueCount: { int: message.dequeueCount },
    Id: { string: message.messageId },
    PopReceipt: { string: popReceipt },
    InsertionTime: { json: JSON.stringify(dateTimeOffset(message.insertedOn)) },
    ExpirationTime: { json: JSON.stringify(dateTimeOffset(message.expiresOn)) },
    NextVisibleTime: { json: JSON.stringify(dateTimeOffset(message.nextVisibleOn)) },
    sys: {
      json: JSON.stringify({ MethodName: functionName, UtcNow: dateTimeOffset(new Date()), RandGuid: randomUUID() }),
    },
  };
}

/** A UTC time as .NET serialises a DateTimeOffset: `2024-05-01T12:00:00+00:00`. */
function dateTimeOffset(date: Date): string {
  return date
    .toISOString()
    .replace(/\.000Z$/, "+00:00")
    .replace(/Z$/, "+00:00");
}
