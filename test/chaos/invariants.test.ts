import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { EventRecord } from "../../dev/src/local/eventLog";
import {
  epochOrderViolations,
  epochsNotIncreasing,
  freezesInLog,
  leaderAgainAfterMs,
  overlappingSteps,
  stepIntervals,
  takeoversByBreak,
  writesOfEpochAfter,
} from "../../scripts/verification/chaos/invariants";
import type { StateVersion } from "../../scripts/verification/chaos/observer";
import { judge } from "../../scripts/verification/chaos/jobs";
import { SeededRandom } from "../../scripts/verification/chaos/random";

const T0 = Date.parse("2025-01-01T00:00:00.000Z");
const at = (ms: number): string => new Date(T0 + ms).toISOString();
const event = (ms: number, instance: string, type: string, fields: Record<string, unknown> = {}): EventRecord => ({
  ts: at(ms),
  instance,
  pid: 1,
  type,
  ...fields,
});
const version = (key: string, epoch: number, ms: number): StateVersion => ({
  key,
  etag: `${key}-${epoch}-${ms}`,
  epoch,
  observedAtMs: T0 + ms,
});

describe("step intervals and overlap", () => {
  it("pairs each step-started with its end, or with the instance's exit when it died inside the step", () => {
    const records = [
      event(0, "a", "step-started", { epoch: 1 }),
      event(900, "a", "step-completed", { epoch: 1 }),
      event(1000, "b", "step-started", { epoch: 2 }),
      event(1500, "b", "instance-exited"),
    ];
    expect(stepIntervals(records, { renewDeadlineMs: 10_000, endOfRunMs: T0 + 5000 })).toEqual([
      { instance: "a", epoch: 1, startMs: T0, endMs: T0 + 900, end: "completed" },
      { instance: "b", epoch: 2, startMs: T0 + 1000, endMs: T0 + 1500, end: "exited" },
    ]);
  });

  it("finds two steps of different terms that overlap, and none when one ends before the other starts", () => {
    const overlapping = [
      event(0, "a", "step-started", { epoch: 1 }),
      event(2000, "a", "step-completed", { epoch: 1 }),
      event(1000, "b", "step-started", { epoch: 2 }),
      event(3000, "b", "step-completed", { epoch: 2 }),
    ];
    expect(
      overlappingSteps(stepIntervals(overlapping, { renewDeadlineMs: 10_000, endOfRunMs: T0 + 5000 })),
    ).toHaveLength(1);
    const sequential = [
      event(0, "a", "step-started", { epoch: 1 }),
      event(999, "a", "step-completed", { epoch: 1 }),
      event(1000, "b", "step-started", { epoch: 2 }),
      event(3000, "b", "step-completed", { epoch: 2 }),
    ];
    expect(overlappingSteps(stepIntervals(sequential, { renewDeadlineMs: 10_000, endOfRunMs: T0 + 5000 }))).toEqual([]);
  });

  it("ends a frozen leader's step at its last renewal sent plus the renew deadline (the documented exception)", () => {
    const records = [
      event(0, "a", "lease-acquired", { epoch: 1 }),
      event(0, "a", "step-started", { epoch: 1 }),
      event(3100, "a", "lease-renewed", { epoch: 1, latencyMs: 100 }),
      event(20_000, "b", "step-started", { epoch: 2 }),
      event(22_000, "b", "step-completed", { epoch: 2 }),
      event(26_000, "a", "step-aborted", { epoch: 1, reason: "deadline" }),
    ];
    const intervals = stepIntervals(records, {
      renewDeadlineMs: 10_000,
      endOfRunMs: T0 + 30_000,
      freezes: [{ instance: "a", fromMs: T0 + 4000, toMs: T0 + 25_000 }],
    });
    expect(intervals[0]).toMatchObject({ endMs: T0 + 13_000, end: "frozen-deadline" });
    expect(overlappingSteps(intervals)).toEqual([]);
    // Without the freeze window the same log is an overlap: the exception applies only to frozen instances.
    expect(overlappingSteps(stepIntervals(records, { renewDeadlineMs: 10_000, endOfRunMs: T0 + 30_000 }))).toHaveLength(
      1,
    );
  });

  it("with takeover, ends a frozen leader's step no later than the freeze plus the takeover deadline (its last heartbeat was sent before it)", () => {
    const records = [
      event(0, "a", "lease-acquired", { epoch: 1 }),
      event(0, "a", "step-started", { epoch: 1 }),
      event(3100, "a", "lease-renewed", { epoch: 1, latencyMs: 100 }),
      event(8000, "b", "lease-acquired", { epoch: 2, brokenBy: "b" }),
      event(8000, "b", "step-started", { epoch: 2 }),
      event(10_000, "b", "step-completed", { epoch: 2 }),
      event(12_500, "a", "step-aborted", { epoch: 1, reason: "deadline" }),
    ];
    const freezes = [{ instance: "a", fromMs: T0 + 4000, toMs: T0 + 12_000 }];
    const intervals = stepIntervals(records, {
      renewDeadlineMs: 10_000,
      takeoverDeadlineMs: 2500,
      endOfRunMs: T0 + 30_000,
      freezes,
    });
    expect(intervals[0]).toMatchObject({ endMs: T0 + 4000 + 250 + 2500, end: "frozen-deadline" });
    expect(overlappingSteps(intervals)).toEqual([]);
    // Without takeover the frozen step may still write until its renew deadline: the takeover at 8 s is an overlap.
    expect(
      overlappingSteps(stepIntervals(records, { renewDeadlineMs: 10_000, endOfRunMs: T0 + 30_000, freezes })),
    ).toHaveLength(1);
    expect(takeoversByBreak(records).map((record) => record.instance)).toEqual(["b"]);
  });
});

/** An event log the chaos suite wrote (`chaos/<scenario>.events.jsonl`), kept as a fixture. */
function fixtureLog(name: string): EventRecord[] {
  return readFileSync(join(__dirname, "fixtures", name), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as EventRecord);
}

describe("a frozen leader's step, bounded by its own evidence (issue 37)", () => {
  // A full `npm run chaos` on a loaded machine failed frozen-leader-takeover on this log: "instance-3@e8
  // (frozen-deadline) and instance-1@e9 (completed) overlap by 435 ms". Term 8 was acquired at 12:07:45.511, frozen at
  // 46.447, and instance-1 acquired term 9 by a break at 48.742. Heartbeats logged nothing, so the checker capped the
  // frozen step at the freeze + 250 ms + the 2,500 ms deadline (49.197).
  const log = fixtureLog("frozen-leader-takeover-2026-11-27.events.jsonl");
  const options = { renewDeadlineMs: 10_000, takeoverDeadlineMs: 2500, endOfRunMs: Date.parse("2026-11-27T12:09:00Z") };
  const frozenStep = (intervals: ReturnType<typeof stepIntervals>) =>
    intervals.find((interval) => interval.instance === "instance-3-22917" && interval.epoch === 8);
  /** The log with term 8's lease-lost naming the takeover deadline its holder counted. */
  const withEvidence = (deadlineAtIso: string): EventRecord[] =>
    log.map((record) =>
      record.type === "lease-lost" && record.epoch === 8
        ? { ...record, takeoverDeadlineAtMs: Date.parse(deadlineAtIso) }
        : record,
    );

  it("reads the freezes from the log's chaos-fault records", () => {
    expect(freezesInLog(log)).toEqual([
      {
        instance: "instance-3-22917",
        fromMs: Date.parse("2026-11-27T12:07:14.679Z"),
        toMs: Date.parse("2026-11-27T12:07:22.684Z"),
      },
      {
        instance: "instance-3-22917",
        fromMs: Date.parse("2026-11-27T12:07:30.721Z"),
        toMs: Date.parse("2026-11-27T12:07:38.725Z"),
      },
      {
        instance: "instance-3-22917",
        fromMs: Date.parse("2026-11-27T12:07:46.447Z"),
        toMs: Date.parse("2026-11-27T12:07:54.455Z"),
      },
    ]);
  });

  it("without the holder's evidence (this log's version) it stays cautious: the freeze + 250 ms + the deadline, and the overlap it reported", () => {
    const intervals = stepIntervals(log, { ...options, freezes: freezesInLog(log) });
    expect(frozenStep(intervals)).toMatchObject({
      endMs: Date.parse("2026-11-27T12:07:49.197Z"),
      end: "frozen-deadline",
    });
    expect(overlappingSteps(intervals)).toEqual([
      "instance-3-22917@e8 (frozen-deadline) and instance-1-22910@e9 (completed) overlap by 435 ms",
    ]);
  });

  it("with the holder's evidence, its step ends at the deadline it counted: no overlap when its last heartbeat was the record write", () => {
    // The successor's break landed 3.1 s (its wait) after its first read of the version it broke: no later heartbeat
    // had landed, so term 8's last successful heartbeat was its record write, sent before its lease-acquired event
    // (45.511): its deadline fell by 48.011, before the break. A term now names that deadline in its lease-lost.
    const log2 = withEvidence("2026-11-27T12:07:48.011Z");
    const intervals = stepIntervals(log2, { ...options, freezes: freezesInLog(log2) });
    expect(frozenStep(intervals)).toMatchObject({
      endMs: Date.parse("2026-11-27T12:07:48.011Z"),
      end: "frozen-deadline",
    });
    expect(overlappingSteps(intervals)).toEqual([]);
  });

  it("a real overlap still fails: a holder whose own deadline fell after the successor's step began", () => {
    // As if a heartbeat sent at 46.6 (after the harness noted the SIGSTOP, before the signal landed) had succeeded.
    const log2 = withEvidence("2026-11-27T12:07:49.100Z");
    const intervals = stepIntervals(log2, { ...options, freezes: freezesInLog(log2) });
    expect(frozenStep(intervals)).toMatchObject({ endMs: Date.parse("2026-11-27T12:07:49.100Z") });
    expect(overlappingSteps(intervals)).toEqual([
      "instance-3-22917@e8 (frozen-deadline) and instance-1-22910@e9 (completed) overlap by 338 ms",
    ]);
  });

  it("a run with the evidence (the same scenario after the change, 2026-11-27): every frozen step ends at its holder's own deadline, before its successor's", () => {
    const run = fixtureLog("frozen-leader-takeover-evidence-2026-11-27.events.jsonl");
    const freezes = freezesInLog(run);
    const intervals = stepIntervals(run, { ...options, endOfRunMs: Date.parse("2026-11-27T14:00:00Z"), freezes });
    const lost = run.filter(
      (record) => record.type === "lease-lost" && typeof record.takeoverDeadlineAtMs === "number",
    );
    expect(freezes).toHaveLength(3);
    expect(lost).toHaveLength(3);
    for (const record of lost) {
      const frozen = intervals.find(
        (interval) => interval.instance === record.instance && interval.epoch === record.epoch,
      );
      expect(frozen).toMatchObject({ end: "frozen-deadline", endMs: record.takeoverDeadlineAtMs });
    }
    expect(overlappingSteps(intervals)).toEqual([]);
  });

  it("the holder's evidence is trusted past the freeze + 250 ms: a process that ran on after SIGSTOP was noted is not cut short", () => {
    const log2 = withEvidence("2026-11-27T12:07:49.400Z");
    const intervals = stepIntervals(log2, { ...options, freezes: freezesInLog(log2) });
    expect(frozenStep(intervals)).toMatchObject({ endMs: Date.parse("2026-11-27T12:07:49.400Z") });
    expect(overlappingSteps(intervals)).toHaveLength(1);
  });
});

describe("stored-state fencing checks", () => {
  it("accepts non-decreasing epochs per document and flags an older epoch after a newer one", () => {
    expect(
      epochOrderViolations([
        version("index.json", 1, 0),
        version("index.json", 2, 100),
        version("jobs/x.json", 1, 150),
        version("index.json", 2, 200),
      ]),
    ).toEqual([]);
    expect(epochOrderViolations([version("index.json", 3, 0), version("index.json", 2, 100)])).toHaveLength(1);
  });

  it("flags a job whose lastEpoch differs from its metadata epoch", () => {
    const job: StateVersion = {
      ...version("jobs/x.json", 4, 0),
      job: { lastEpoch: 3, status: "running", doneCount: 0, failedCount: 0 },
    };
    expect(epochOrderViolations([job])).toHaveLength(1);
  });

  it("finds a zombie epoch's versions first seen after it woke", () => {
    const versions = [version("index.json", 5, 0), version("jobs/x.json", 5, 1000), version("jobs/x.json", 6, 2000)];
    expect(writesOfEpochAfter(versions, 5, T0 + 500).map((v) => v.key)).toEqual(["jobs/x.json"]);
  });

  it("flags a term whose epoch does not exceed the previous term's", () => {
    expect(
      epochsNotIncreasing([
        event(0, "a", "lease-acquired", { epoch: 2 }),
        event(10, "b", "lease-acquired", { epoch: 2 }),
      ]),
    ).toHaveLength(1);
  });
});

describe("leader again after a fault", () => {
  const records = [
    event(0, "a", "lease-acquired", { epoch: 1 }),
    event(1000, "a", "instance-exited"),
    event(17_000, "b", "lease-acquired", { epoch: 2 }),
    event(18_000, "b", "lease-released", { epoch: 2 }),
  ];

  it("measures the time to the next term after the fault ended", () => {
    expect(leaderAgainAfterMs(records, T0 + 1000, new Set(["a"]), T0 + 30_000)).toBe(16_000);
  });

  it("is 0 when an unaffected instance's term was running at that moment, undefined when no term came", () => {
    expect(leaderAgainAfterMs(records, T0 + 17_500, new Set(["a"]), T0 + 30_000)).toBe(0);
    expect(leaderAgainAfterMs(records, T0 + 19_000, new Set(["a"]), T0 + 30_000)).toBeUndefined();
  });
});

describe("job verdicts", () => {
  const job = {
    id: "j",
    label: "j",
    itemCount: 3,
    goodItems: 2,
    badItems: [2],
    expected: { north: { count: 2, sum: 3, min: 1, max: 2 } },
  };
  const status = (done: number, failed: number, count: number, failures: { item: number; reason: string }[]) => ({
    id: "j",
    kind: "group-by",
    status: "completed" as const,
    progress: { total: 3, dispatched: 3, done, failed, skipped: 0 },
    aggregate: { north: { count, sum: count === 2 ? 3 : 4, min: 1, max: 2 } },
    failures,
    createdAt: at(0),
    completedAt: at(1),
    lastEpoch: 1,
  });

  it("passes a job whose good items are counted once and whose bad item is reported", () => {
    expect(judge(job, status(2, 1, 2, [{ item: 2, reason: "not a number" }])).problems).toEqual([]);
  });

  it("counts an aggregate with extra rows as double counting and a missing failure reason as unreported", () => {
    const verdict = judge(job, status(2, 1, 3, []));
    expect(verdict.doubleCounted).toBe(1);
    expect(verdict.unreportedBadItems).toBe(1);
  });

  it("names the reasons a good item was recorded as failed, grouped by reason, so a run's failure can be diagnosed", () => {
    const failures = [
      { item: 0, reason: "input blob missing" },
      { item: 1, reason: "input blob missing" },
      { item: 2, reason: "not a number" },
    ];
    expect(judge(job, status(0, 3, 0, failures)).problems[0]).toBe(
      'job j: good items recorded as failed: 0, 1 ("input blob missing")',
    );
  });
});

describe("seeded randomness", () => {
  it("repeats the same choices for the same seed", () => {
    const a = new SeededRandom(42);
    const b = new SeededRandom(42);
    expect(Array.from({ length: 5 }, () => a.int(0, 1000))).toEqual(Array.from({ length: 5 }, () => b.int(0, 1000)));
  });
});

describe("terms end with their step", () => {
  it("does not count a term whose step aborted (no release logged, storage down) as a leader", () => {
    const records = [
      event(0, "a", "lease-acquired", { epoch: 1 }),
      event(500, "a", "step-aborted", { epoch: 1, reason: "lost" }),
      event(25_000, "b", "lease-acquired", { epoch: 2 }),
    ];
    expect(leaderAgainAfterMs(records, T0 + 20_000, new Set(), T0 + 30_000)).toBe(5000);
  });
});
