import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { MAX_DEQUEUE_COUNT } from "../../src/app/context";
import { decodeBody, encodeBody } from "../../src/storage/StorageQueue";

interface HostJson {
  extensions: { queues: { maxDequeueCount: number; messageEncoding: string; batchSize: number } };
}
const host = JSON.parse(readFileSync(join(__dirname, "..", "..", "host.json"), "utf8")) as HostJson;

describe("host.json agrees with the code", () => {
  it("maxDequeueCount is the one the worker uses to spot a last delivery", () => {
    expect(host.extensions.queues.maxDequeueCount).toBe(MAX_DEQUEUE_COUNT);
  });

  it("messageEncoding is base64, which the app's producers use", () => {
    expect(host.extensions.queues.messageEncoding).toBe("base64");
    expect(decodeBody(encodeBody('{"v":1,"é":"ü"}', "base64"), "base64")).toBe('{"v":1,"é":"ü"}');
  });

  it.each([
    ["plain text", "{not base64}"],
    ["base64 with a bad length", "abc"],
    ["base64 of invalid UTF-8", Buffer.from([0xff, 0xfe, 0xfd]).toString("base64")],
  ])("decoding rejects %s (it goes to poison like a host binding error)", (_name, body) => {
    expect(decodeBody(body, "base64")).toBeUndefined();
  });
});
