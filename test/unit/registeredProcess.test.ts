import { describe, expect, it } from "vitest";
import { defineTaskKind, ItemError } from "../../src/coordination/kinds/taskKinds";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { inputOf } from "../../src/coordination/worker/workerInputs";
import { silentLogger } from "../../src/library/util/logger";

/**
 * A registered kind's `process` as the worker calls it, once per item: a synchronous kind's partial comes back as it
 * is, not wrapped in a promise (a promise, its executor and its resolvers per item: issue 35); an asynchronous kind's
 * promise is passed through, and a synchronous throw stays a throw the worker's try block catches.
 */
const context = {
  params: null,
  jobId: "job",
  index: 0,
  idempotencyKey: "job/0",
  abortSignal: new AbortController().signal,
  logger: silentLogger,
};

function registered(process: Parameters<typeof defineTaskKind>[0]["process"]) {
  const kind = new TaskRegistry([defineTaskKind({ name: "k", process })]).get("k");
  if (kind === undefined) throw new Error("the kind is not registered");
  return kind;
}

describe("a registered kind's process", () => {
  it("returns a synchronous kind's partial itself", () => {
    const partial = { n: 1 };
    expect(registered(() => partial).process(inputOf(undefined, "a"), context)).toBe(partial);
  });

  it("returns an asynchronous kind's promise, which gives its partial", async () => {
    const out = registered((input) => Promise.resolve(input.text.length)).process(inputOf(undefined, "abc"), context);
    expect(out).toBeInstanceOf(Promise);
    await expect(out).resolves.toBe(3);
  });

  it("throws what a synchronous kind throws", () => {
    const kind = registered(() => {
      throw new ItemError("bad row");
    });
    expect(() => kind.process(inputOf(undefined, "a"), context)).toThrow(ItemError);
  });
});
