import { describe, expect, it } from "vitest";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { world } from "../support/coordinationWorld";

const delivery = { id: "m1", dequeueCount: 1, maxDequeueCount: 5 };
/** Bytes a text takes on the queue once base64-encoded (host.json `messageEncoding`); Azure takes at most 64 KiB. */
const queueBytes = (text: string): number => Math.ceil(Buffer.byteLength(text) / 3) * 4;

/**
 * The worker's rejection of a malformed work message never throws and always fits one queue message: otherwise the
 * invocation fails on every delivery and the host poisons the message after 5 of them, without the reason.
 */
describe("the worker's rejection of a malformed work message", () => {
  it("does not throw on valid JSON nested 20,000 levels deep, delivered already parsed (as the Functions host does)", async () => {
    const { deps, poison } = world();
    const depth = 20_000;
    const text = `{"v":2,"jobId":"j1","first":0,"kind":"group-by","params":${"[".repeat(depth)}${"]".repeat(depth)},"inputs":[{"inline":"x"}]}`;
    expect(queueBytes(text)).toBeLessThan(64 * 1024); // fits one queue message
    const payload: unknown = JSON.parse(text);
    const outcome = await processWorkMessage(deps, payload, delivery).then(
      (o) => o.status,
      (error: unknown) => `threw: ${String(error)}`,
    );
    expect({ outcome, poison: poison.length }).toEqual({ outcome: "rejected", poison: 1 });
    const [rejection] = poison.bodies();
    // It still names the unit, so the leader fails its item with the reason.
    expect(JSON.parse(rejection ?? "{}")).toMatchObject({
      rejected: { jobId: "j1", item: 0, count: 1, reason: expect.stringMatching(/^params are not valid/) as unknown },
    });
  });

  it("fits one queue message even when the reason quotes 1,000 unknown keys of a message that fits", async () => {
    const { deps, poison } = world();
    const message: Record<string, unknown> = {
      v: 2,
      jobId: "j1",
      first: 0,
      kind: "group-by",
      params: {},
      inputs: [{ inline: "x" }],
    };
    for (let i = 0; i < 1000; i++) message[`unexpected-key-${String(i).padStart(4, "0")}-${"x".repeat(20)}`] = 0;
    const text = JSON.stringify(message);
    expect(queueBytes(text)).toBeLessThan(64 * 1024); // the work message itself fits
    await processWorkMessage(deps, JSON.parse(text), delivery);
    const [rejection] = poison.bodies();
    expect(queueBytes(rejection ?? "")).toBeLessThanOrEqual(64 * 1024);
  });

  it("fits one queue message when the original is 45 KiB of characters that JSON escapes six-fold", async () => {
    const { deps, poison } = world();
    // A string payload the host could not parse as JSON: control characters become \u0001 in the rejection's JSON.
    const payload = "\u0001".repeat(45 * 1024);
    await processWorkMessage(deps, payload, delivery);
    const [rejection] = poison.bodies();
    expect(queueBytes(rejection ?? "")).toBeLessThanOrEqual(64 * 1024);
    expect(JSON.parse(rejection ?? "{}")).toMatchObject({
      rejected: { reason: expect.stringMatching(/^not valid JSON/) as unknown },
    });
  });
});

/**
 * A rolling deploy: a newer leader may send work messages of a version this worker does not know yet. Rejecting one
 * would fail all its items at once, though an upgraded worker would do them; so the worker throws instead, the host
 * retries (another, upgraded instance may take it), and after its last delivery the host moves it — intact — to the
 * poison queue, where the newer leader that sent it records its items as failed.
 */
describe("a work message of a newer version than the worker knows", () => {
  const newer = { v: 99, jobId: "j1", first: 0, kind: "group-by", params: {}, inputs: [{ inline: "x" }], extra: 1 };

  it.each([
    ["parsed, as the host delivers JSON", newer],
    ["as JSON text", JSON.stringify(newer)],
  ])("is thrown back for the host to retry, on every delivery, never rejected (%s)", async (_how, payload) => {
    const { deps, poison, results } = world();
    const warnings: string[] = [];
    deps.logger = { ...deps.logger, warn: (message) => warnings.push(message) };
    for (let dequeueCount = 1; dequeueCount <= 5; dequeueCount++)
      await expect(processWorkMessage(deps, payload, { id: "m1", dequeueCount, maxDequeueCount: 5 })).rejects.toThrow(
        /work message m1 is of version 99; this worker knows versions 1–3/,
      );
    expect({ poison: poison.length, results: results.length }).toEqual({ poison: 0, results: 0 });
    expect(warnings).toHaveLength(5);
  });

  it("an older or unknown version that is not newer is still rejected as malformed", async () => {
    const { deps, poison } = world();
    for (const v of [0, "3", 2.5, null])
      await expect(processWorkMessage(deps, { ...newer, v }, delivery)).resolves.toMatchObject({ status: "rejected" });
    expect(poison.length).toBe(4);
  });
});
