import { describe, expect, it } from "vitest";
import { RestError } from "@azure/storage-blob";
import { OnDemandCreation, retryAfterCreating } from "../../src/azure/OnDemandCreation";

/** A storage answer with `statusCode` and `code`, as the SDK throws it. */
const answer = (statusCode: number, code: string): RestError =>
  new RestError(`${statusCode} ${code} (simulated)`, { statusCode, code });

/** An operation that fails with `errors` in turn, then resolves "done"; counts its calls. */
function failingThen(...errors: Error[]): { operation: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    operation: () => {
      const error = errors[calls++];
      return error === undefined ? Promise.resolve("done") : Promise.reject(error);
    },
    calls: () => calls,
  };
}

describe("retryAfterCreating", () => {
  const isMissing = (error: unknown): boolean => error instanceof RestError && error.statusCode === 404;

  it("runs the operation once and creates nothing when it succeeds", async () => {
    const op = failingThen();
    let created = 0;
    await expect(retryAfterCreating(op.operation, isMissing, () => Promise.resolve(created++))).resolves.toBe("done");
    expect([op.calls(), created]).toEqual([1, 0]);
  });

  it("creates, then runs the operation once more, when it found what it needs missing", async () => {
    const op = failingThen(answer(404, "ContainerNotFound"));
    const order: string[] = [];
    const operation = (): Promise<string> => (order.push("operation"), op.operation());
    await expect(retryAfterCreating(operation, isMissing, () => Promise.resolve(order.push("create")))).resolves.toBe(
      "done",
    );
    expect(order).toEqual(["operation", "create", "operation"]);
  });

  it("rejects with any other failure as it is, creating nothing", async () => {
    const conflict = answer(409, "LeaseAlreadyPresent");
    const op = failingThen(conflict);
    let created = 0;
    await expect(retryAfterCreating(op.operation, isMissing, () => Promise.resolve(created++))).rejects.toBe(conflict);
    expect([op.calls(), created]).toEqual([1, 0]);
  });

  it("rejects with the creation's failure, and does not run the operation again", async () => {
    const op = failingThen(answer(404, "QueueNotFound"));
    const outage = answer(503, "ServerBusy");
    await expect(retryAfterCreating(op.operation, isMissing, () => Promise.reject(outage))).rejects.toBe(outage);
    expect(op.calls()).toBe(1);
  });

  it("tries once more only: a second not-found rejects as it is", async () => {
    const second = answer(404, "BlobNotFound");
    const op = failingThen(answer(404, "BlobNotFound"), second);
    let created = 0;
    await expect(retryAfterCreating(op.operation, isMissing, () => Promise.resolve(created++))).rejects.toBe(second);
    expect([op.calls(), created]).toEqual([2, 1]);
  });
});

describe("OnDemandCreation", () => {
  it("shares the creation in flight between concurrent callers, and forgets it once finished", async () => {
    let calls = 0;
    const creation = new OnDemandCreation(() => {
      calls++;
      return Promise.resolve();
    }, "ContainerNotFound");
    await Promise.all([creation.ensure(), creation.ensure(), creation.ensure()]);
    expect(calls).toBe(1);
    await creation.ensure(); // e.g. the container was deleted since: created again
    expect(calls).toBe(2);
  });

  it("does not cache a failed creation: the next caller tries again", async () => {
    let calls = 0;
    const creation = new OnDemandCreation(
      () => (++calls === 1 ? Promise.reject(new Error("503 (simulated)")) : Promise.resolve("created")),
      "QueueNotFound",
    );
    await expect(creation.ensure()).rejects.toThrow("503 (simulated)");
    await expect(creation.ensure()).resolves.toBe("created");
    expect(calls).toBe(2);
  });

  it("run: creates and retries when storage answers its missing code, joining one creation for concurrent callers", async () => {
    let created = 0;
    const creation = new OnDemandCreation(() => Promise.resolve(created++), "QueueNotFound");
    const ops = [failingThen(answer(404, "QueueNotFound")), failingThen(answer(404, "QueueNotFound")), failingThen()];
    await expect(Promise.all(ops.map((op) => creation.run(op.operation)))).resolves.toEqual(["done", "done", "done"]);
    expect(ops.map((op) => op.calls())).toEqual([2, 2, 1]);
    expect(created).toBe(1);
  });

  it("run: another code, even another not-found, rejects as it is without creating", async () => {
    let created = 0;
    const creation = new OnDemandCreation(() => Promise.resolve(created++), "ContainerNotFound");
    const blobMissing = answer(404, "BlobNotFound");
    await expect(creation.run(failingThen(blobMissing).operation)).rejects.toBe(blobMissing);
    expect(created).toBe(0);
  });

  it("passes the caller's abort signal to the creation, from ensure and from run", async () => {
    const seen: (AbortSignal | undefined)[] = [];
    const creation = new OnDemandCreation((options) => {
      seen.push(options.abortSignal);
      return Promise.resolve();
    }, "ContainerNotFound");
    const signal = new AbortController().signal;
    await creation.ensure({ abortSignal: signal });
    await creation.run(failingThen(answer(404, "ContainerNotFound")).operation, { abortSignal: signal });
    expect(seen).toEqual([signal, signal]);
  });
});
