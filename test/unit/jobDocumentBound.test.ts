import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { readSettings } from "../../src/app/settings";
import { groupRecords, MAX_GROUP_KEY_LENGTH } from "../../src/groupBy/groupBy";
import { jsonByteLength } from "../../src/coordination/state/jsonSize";
import { keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ItemError } from "../../src/coordination/kinds/taskKinds";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { runOnHeap } from "../support/heapChild";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Issue 21, item 1: a job's stored document is bounded in bytes (MAX_JOB_DOCUMENT_BYTES), and the group-by kind
 * bounds its key length, so no job can grow its document until a fold cannot serialize it (or the leader's memory
 * gives out re-serializing it in every step).
 */
describe("a job's document is bounded in bytes (issue 21, item 1)", () => {
  it("the review's job — 140 outcomes of one group with a 4,000,000-character key each — ends failed with the reason on a 512 MB heap, its document within the bound", () => {
    const child = runOnHeap(resolve(__dirname, "jobDocumentBound.child.ts"), 512, []);
    const limit = readSettings({}).MAX_JOB_DOCUMENT_BYTES;
    expect(child).toMatchObject({ status: 0, oom: false });
    const [summary, reason] = child.stdout.split("\n");
    const [, status, done, bytes, left] =
      /^job (\w+) done (\d+) document (\d+) bytes results left (\d+)$/.exec(summary ?? "") ?? [];
    expect({ status, left }).toEqual({ status: "failed", left: "0" });
    expect(Number(done)).toBeGreaterThan(0);
    expect(Number(done)).toBeLessThan(140);
    expect(Number(bytes)).toBeLessThanOrEqual(limit);
    expect(reason).toMatch(
      new RegExp(`^the job's document would be more than MAX_JOB_DOCUMENT_BYTES \\(${limit} bytes\\) of JSON`),
    );
  });

  it("a job whose aggregate would pass a small bound ends failed with the reason, its counts and aggregate as before that batch; later results are not counted", async () => {
    const made = world({ maxJobDocumentBytes: 64 * 1024, dispatchBatchSize: 100, maxInFlight: 100 });
    const { deps, state, results } = made;
    const longKey = (n: number): string => `${String(n).padStart(4, "0")}-${"k".repeat(995)}`;
    const { id } = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: Array.from({ length: 100 }, (_, n) => item(longKey(n), n)),
    });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // 40 units first: 40 groups of some 1 KB each, within the bound.
    expect(await work(deps, made.work, deps, 40)).toBe(40);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const before = await readJob(state, id);
    expect(before).toMatchObject({ status: "running", doneCount: 40 });
    await work(deps, made.work);
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(state, id);
    expect(job).toMatchObject({ status: "failed", doneCount: 40, failedCount: 0 });
    expect(job?.aggregate).toEqual(before?.aggregate);
    expect(job?.failureReason).toBe(
      `the job's document would be more than MAX_JOB_DOCUMENT_BYTES (65536 bytes) of JSON, with an aggregate of 100 groups: its groups' keys are too long, or there are too many of them; 40 items were done and 0 failed when the job stopped`,
    );
    expect(jsonByteLength((await state.read(keys.jobState(id)))?.value)).toBeLessThanOrEqual(64 * 1024);
    expect(report.completedJobs).toEqual([]);
    expect(results.length).toBe(0);
  });
});

describe("the group-by kind bounds a group's key length (issue 21, item 1)", () => {
  const ndjson = { format: "ndjson", keyField: "k", valueField: "v" } as const;

  it(`an item with a key of more than ${MAX_GROUP_KEY_LENGTH} characters fails alone, with the reason`, () => {
    const long = JSON.stringify({ k: "x".repeat(4_000_000), v: 1 });
    const process = (): unknown => groupRecords(`${JSON.stringify({ k: "a", v: 1 })}\n${long}`, ndjson);
    expect(process).toThrow(ItemError);
    expect(process).toThrow(
      `record 2: the group key in field "k" has 4000000 characters; a group key may have at most ${MAX_GROUP_KEY_LENGTH}`,
    );
  });

  it(`a key of exactly ${MAX_GROUP_KEY_LENGTH} characters is a group like any other`, () => {
    const key = "y".repeat(MAX_GROUP_KEY_LENGTH);
    expect(groupRecords(JSON.stringify({ k: key, v: 2 }), ndjson)).toEqual([[key, 1, "2000000", 2, 2]]);
  });
});
