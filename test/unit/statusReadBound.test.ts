import { describe, expect, it } from "vitest";
import { createRegistry } from "../../scripts/support/repoKinds";
import { WHOLE_DOCUMENT_READ_BYTES, readStatusView, type StatusSources } from "../../src/app/statusView";
import { keys, type JobState } from "../../src/coordination/state/jobState";
import { jobSummarySchema, summarizeJob } from "../../src/coordination/state/jobSummary";
import { MAX_SUMMARY_BYTES } from "../../src/library/fencing/StateStore";
import { FakeLeaseStore } from "../support/FakeLeaseStore";
import { CountingStateStore, maxSizeJob, writeMaxSizeJobs } from "../support/maxSizeJobs";
import { MemoryFiles, MemoryQueue } from "../support/memoryPorts";
import { jsonByteLength } from "../../src/coordination/state/jsonSize";

/**
 * Issue 21, item 2: a refresh of the status page reads what the page shows — at most 1 MiB of state for 25 active and
 * 10 recent jobs of the documented maximum size (1,000,000 items, 200,000 groups: ~7.8 MiB each) — counted through the
 * state port. (Its CPU is measured by `npm run bench:status`, not here.)
 */
describe("a status refresh reads summaries, not job documents (issue 21, item 2)", () => {
  function sources(state: CountingStateStore): StatusSources {
    return {
      leaseStore: new FakeLeaseStore(),
      state,
      system: new MemoryFiles(),
      registry: createRegistry(),
      workPoisonQueue: new MemoryQueue("work-items-poison"),
      resultsPoisonQueue: new MemoryQueue("work-results-poison"),
    };
  }

  it("25 active and 10 recent jobs of the maximum size: at most 1 MiB read, no job document read whole, every job shown with its counts and reasons", async () => {
    expect(jsonByteLength(maxSizeJob("x")) / 1024 / 1024).toBeCloseTo(7.8, 0);
    const state = new CountingStateStore();
    const { active, recent } = await writeMaxSizeJobs(state, { active: 25, recent: 10 });
    state.bytesRead = 0;
    const view = await readStatusView(sources(state), { nowMs: Date.parse("2026-05-01T14:00:00Z") });
    expect(view.problems).toEqual([]);
    expect(state.bytesRead).toBeLessThanOrEqual(1024 * 1024);
    expect(state.wholeReads.filter((key) => key !== keys.index && !key.startsWith("terms"))).toEqual([]);
    expect(view.jobs.active.map((job) => job.id)).toEqual(active);
    expect(view.jobs.recent.map((job) => job.id)).toEqual([...recent].reverse());
    expect(view.jobs.active[0]).toMatchObject({
      status: "running",
      total: 1_000_000,
      dispatched: 1_000_000,
      done: 500_000,
      failed: 0,
      unrecordedFailures: 0,
      reasons: [{ reason: 'record 0: field "amount" is not a number ("n/a")', count: 1 }, {}, {}, {}, {}],
    });
    expect(view.jobs.recent[0]).toMatchObject({
      status: "failed",
      failureReason: "the aggregate would have 200,003 groups, more than MAX_AGGREGATE_GROUPS",
    });
  });

  it("a job written without a summary (by an earlier version) is shown from its document while the refresh's whole-document bytes last, and named among the problems beyond", async () => {
    const state = new CountingStateStore();
    const small = { ...maxSizeJob("old-small"), itemCount: 8, aggregate: [], doneBits: "AA==", failedBits: "AA==" };
    await state.write(keys.jobState("old-small"), { ...small, doneCount: 3 }, 1, { ifNoneMatch: "*" });
    await state.write(keys.jobState("old-large"), maxSizeJob("old-large"), 1, { ifNoneMatch: "*" });
    await state.write(keys.index, { v: 1, active: ["old-small", "old-large"], recent: [] }, 1, { ifNoneMatch: "*" });
    const view = await readStatusView(sources(state));
    expect(state.bytesRead).toBeLessThanOrEqual(WHOLE_DOCUMENT_READ_BYTES + 64 * 1024);
    expect(view.jobs.active.map((job) => [job.id, job.done])).toEqual([["old-small", 3]]);
    expect(view.problems).toEqual([
      expect.stringMatching(
        /^job old-large: written by an earlier version, without a summary, and its state \(\d+ bytes\) is more than a refresh reads: GET \/api\/jobs\/old-large shows it$/,
      ),
    ]);
  });
});

describe("a job's summary (issue 21, item 2)", () => {
  it("a pending job registered while the refresh reads it is shown from its spec: its new state document is not read whole (simulator seed 1108)", async () => {
    const state = new CountingStateStore();
    const files = new MemoryFiles();
    const src: StatusSources = {
      leaseStore: new FakeLeaseStore(),
      state,
      system: files,
      registry: createRegistry(),
      workPoisonQueue: new MemoryQueue("work-items-poison"),
      resultsPoisonQueue: new MemoryQueue("work-results-poison"),
    };
    const id = "0f1e2d3c-4b5a-4697-8877-665544332211";
    const job = {
      ...maxSizeJob(id),
      itemCount: 8,
      aggregate: [],
      doneBits: "AA==",
      failedBits: "AA==",
      status: "running",
    };
    await files.writeText(
      keys.spec(id),
      JSON.stringify({ v: 1, id, kind: "group-by", params: null, itemCount: 8, chunkSize: 1000, createdAtMs: 0 }),
    );
    await files.writeText(keys.inbox(id), "");
    // The leader registers the job right after the refresh found no state for it (before the next read).
    const readSummary = state.readSummary.bind(state);
    state.readSummary = async (key) => {
      const read = await readSummary(key);
      if (key === keys.jobState(id))
        await state.write(
          key,
          job,
          7,
          { ifNoneMatch: "*" },
          { summary: JSON.stringify(summarizeJob(job as JobState)) },
        );
      return read;
    };
    const view = await readStatusView(src, { nowMs: Date.parse("2026-05-01T14:00:00Z") });
    expect(view.jobs.pending.map((line) => line.id)).toEqual([id]);
    expect(state.wholeReads.filter((key) => key.startsWith("jobs/"))).toEqual([]);
  });

  it(`fits MAX_SUMMARY_BYTES whatever the job's reasons: 200 failures of long multi-byte reasons and a long failure reason`, () => {
    const job = maxSizeJob("j", {
      failureReason: "é".repeat(5000),
      failures: Array.from({ length: 200 }, (_, n) => ({ item: n, reason: `${n % 7}${"€".repeat(2000)}` })),
    });
    const summary = summarizeJob(job);
    expect(Buffer.byteLength(summary)).toBeLessThanOrEqual(MAX_SUMMARY_BYTES);
    const parsed = jobSummarySchema.parse(JSON.parse(summary));
    expect(parsed).toMatchObject({
      status: "running",
      itemCount: 1_000_000,
      doneCount: 500_000,
      recordedFailures: 200,
    });
    expect(parsed.reasons.length).toBeGreaterThan(0);
  });

  it("is written with every job write and says what the document says", async () => {
    const state = new CountingStateStore();
    await writeMaxSizeJobs(state, { active: 1, recent: 1 });
    for (const id of ["active-0", "recent-0"]) {
      const stored = await state.readSummary(keys.jobState(id));
      const doc = (await state.read(keys.jobState(id)))?.value as JobState;
      const summary = jobSummarySchema.parse(JSON.parse(stored?.summary ?? "null"));
      expect(summary).toMatchObject({
        status: doc.status,
        itemCount: doc.itemCount,
        dispatched: doc.dispatched,
        doneCount: doc.doneCount,
        failedCount: doc.failedCount,
        lastEpoch: doc.lastEpoch,
        recordedFailures: doc.failures.length,
      });
    }
  });
});
