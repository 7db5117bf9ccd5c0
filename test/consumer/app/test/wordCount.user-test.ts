// A user's unit test of their own task kind, alone: no storage, no host, no cluster (issue 44, done-criterion (b)).
// Part of the user's project (test/consumer/app), run there by test/consumer/userApp.test.ts with the project's
// vitest, against the packed development package's testing entry.
import { expect, it } from "vitest";
import { runKind } from "azure-leader-coordinator-dev/testing";
import { wordCount } from "../src/wordCount";

it("counts the words and letters of my items, and fails an item that is not text alone", async () => {
  const started = performance.now();
  const run = await runKind(wordCount, ["one two three", "four", new TextDecoder().decode(new Uint8Array([104, 0]))], {
    jobId: "job-7",
  });
  console.info(`runKind(word-count, 3 items) took ${(performance.now() - started).toFixed(1)} ms`);
  expect(run.items.map((item) => item.status)).toEqual(["done", "done", "failed"]);
  expect(run.items[2]).toEqual({ index: 2, status: "failed", reason: "item 2 is not text" });
  // The aggregate as the job's status shows it: typed by the kind's view.
  const aggregate: { words: number; letters: number; distinctKeys: number } | null = run.aggregate;
  expect(aggregate).toEqual({ words: 4, letters: 15, distinctKeys: 2 });
  expect(run.items[0]).toMatchObject({ partial: { keys: ["job-7/0"] } });
});
