import { describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { runKind } from "../../dev/src/testing/runKind";
import { ConfigurationError } from "../../src/library/errors";
import { defineTaskKind, ItemError } from "../../src/index";
import { groupByKind } from "../../src/groupBy/groupBy";

/**
 * `runKind` (the development package's testing entry): a task kind alone, as a worker hands it items and the leader
 * folds their partials — the job checked as a submission is, the context each item gets, ItemError versus a transient
 * error, partials through JSON and the aggregate's schema, the aggregate merged and viewed.
 */
describe("runKind: a task kind alone, without storage or a host", () => {
  const seen: { index: number; key: string; jobId: string; params: unknown; aborted: boolean }[] = [];
  const words = defineTaskKind({
    name: "words",
    params: z.object({ minLength: z.number().int().min(1) }),
    concurrency: 2,
    async process(input, context) {
      seen.push({
        index: context.index,
        key: context.idempotencyKey,
        jobId: context.jobId,
        params: context.params,
        aborted: context.abortSignal.aborted,
      });
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (input.text === "") throw new ItemError("empty item");
      if (input.text === "flaky") throw new Error("storage timed out");
      context.logger.info(`item ${context.index}: ${input.text.length} characters`);
      const counted = input.text.split(/\s+/).filter((word) => word.length >= context.params.minLength);
      return { words: counted.length, blobs: input.blob === undefined ? 0 : 1 };
    },
    aggregate: {
      empty: () => ({ words: 0, blobs: 0 }),
      merge: (a, b) => ({ words: a.words + b.words, blobs: a.blobs + b.blobs }),
      view: (total) => ({ totalWords: total.words, fromBlobs: total.blobs }),
    },
  });

  it("runs each item with the context a worker gives it, and merges and views the done items' partials", async () => {
    seen.length = 0;
    const run = await runKind(words, ["a bb ccc", { inline: "dd e" }, { blob: "in/x.txt", content: "fff gg" }], {
      params: { minLength: 2 },
      jobId: "job-1",
    });
    expectTypeOf(run.aggregate).toEqualTypeOf<{ totalWords: number; fromBlobs: number } | null>();
    expect(run.aggregate).toEqual({ totalWords: 5, fromBlobs: 1 });
    expect(run.items).toEqual([
      { index: 0, status: "done", partial: { words: 2, blobs: 0 } },
      { index: 1, status: "done", partial: { words: 1, blobs: 0 } },
      { index: 2, status: "done", partial: { words: 2, blobs: 1 } },
    ]);
    expect({ done: run.done, failed: run.failed }).toEqual({ done: 3, failed: 0 });
    expect(
      seen.map(({ index, key, jobId, params }) => ({ index, key, jobId, params })).sort((a, b) => a.index - b.index),
    ).toEqual([
      { index: 0, key: "job-1/0", jobId: "job-1", params: { minLength: 2 } },
      { index: 1, key: "job-1/1", jobId: "job-1", params: { minLength: 2 } },
      { index: 2, key: "job-1/2", jobId: "job-1", params: { minLength: 2 } },
    ]);
    expect(run.logs.map((line) => line.message).sort()).toEqual([
      "item 0: 8 characters",
      "item 1: 4 characters",
      "item 2: 6 characters",
    ]);
  });

  it("an ItemError fails its item alone with its message; another error is reported as transient", async () => {
    const run = await runKind(words, ["one two", "", "flaky"], { params: { minLength: 1 } });
    expect(run.items[0]).toEqual({ index: 0, status: "done", partial: { words: 2, blobs: 0 } });
    expect(run.items[1]).toEqual({ index: 1, status: "failed", reason: "empty item" });
    expect(run.items[2]).toMatchObject({ index: 2, status: "transient-error" });
    expect((run.items[2] as { error: Error }).error.message).toBe("storage timed out");
    expect({ done: run.done, failed: run.failed, aggregate: run.aggregate }).toEqual({
      done: 1,
      failed: 1,
      aggregate: { totalWords: 2, fromBlobs: 0 },
    });
  });

  it("refuses the job as the submit route would: bad params, named by field", async () => {
    const refused = runKind(words, ["x"], { params: { minLength: 0 } });
    await expect(refused).rejects.toThrow(ConfigurationError);
    await expect(runKind(words, ["x"], { params: { minLength: 0 } })).rejects.toThrow(
      /^The job would be refused: params\.minLength: /,
    );
    await expect(runKind(words, [], { params: { minLength: 1 } })).rejects.toThrow(
      /items: a job needs at least one item/,
    );
  });

  it("a partial that does not survive JSON, or that the aggregate's schema refuses, fails its item as it would in the leader", async () => {
    const dates = defineTaskKind({
      name: "dates",
      // Its types say an object with a string, where it returns a Date or nothing: what JSON makes of that is what
      // the leader gets.
      process: (input) =>
        (input.text === "undefined" ? undefined : { at: new Date(0), n: Number(input.text) }) as unknown as {
          at: string;
          n: number;
        },
      aggregate: {
        schema: z.object({ at: z.string(), n: z.number().int() }),
        empty: () => ({ at: "", n: 0 }),
        merge: (a, b) => ({ at: a.at > b.at ? a.at : b.at, n: a.n + b.n }),
      },
    });
    const run = await runKind(dates, ["1", "1.5", "undefined"]);
    expect(run.items[0]).toEqual({ index: 0, status: "done", partial: { at: "1970-01-01T00:00:00.000Z", n: 1 } });
    expect(run.items[1]).toMatchObject({ index: 1, status: "failed" });
    expect((run.items[1] as { reason: string }).reason).toMatch(/^its partial was refused by the schema: n: /);
    expect(run.items[2]).toEqual({
      index: 2,
      status: "failed",
      reason: "its partial (undefined) does not survive JSON",
    });
  });

  it("runs the built-in group-by kind on CSV items, in milliseconds (no storage, no processes)", async () => {
    const started = performance.now();
    const run = await runKind(groupByKind, ["region,amount\neu,3\nus,4\n", "region,amount\neu,5.5\n"], {
      params: { format: "csv", keyField: "region", valueField: "amount" },
    });
    // Reported, not asserted: the time is the benchmarks' business.
    console.info(`runKind(group-by, 2 items): ${(performance.now() - started).toFixed(1)} ms`);
    expect(run.aggregate).toEqual({
      eu: { count: 2, sum: 8.5, min: 3, max: 5.5 },
      us: { count: 1, sum: 4, min: 4, max: 4 },
    });
  });
});
