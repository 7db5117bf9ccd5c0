import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readBefore, roundOrder, roundRatios } from "../../scripts/verification/bench/throughput/compare";
import {
  billedGbSeconds,
  costPerMillion,
  perExecutionGbSeconds,
  priceClassOf,
  requestsByPriceClass,
} from "../../scripts/verification/bench/throughput/cost";
import { peerEstimates } from "../../scripts/verification/bench/throughput/peers";
import { parseThroughputArgs, UsageError } from "../../scripts/verification/bench/throughput/cli";
import {
  describeRequest,
  queueEndpointOf,
  type RequestCount,
} from "../../scripts/verification/bench/throughput/requestCounter";
import {
  scenarioReport,
  scenarioTable,
  summarizeImplementation,
  type RunSample,
} from "../../scripts/verification/bench/throughput/report";
import { meanItemBytes, scenarioJob } from "../../scripts/verification/bench/throughput/scenarios";
import { packUnits } from "../../scripts/verification/bench/throughput/units";
import { parseCpuTimes, readCpuTimes, sumOf } from "../../scripts/verification/bench/throughput/cpuTimes";
import {
  IDLE_LOOP_MS,
  POLL_MAX_MS,
  POLL_MIN_MS,
  pollDelaysMs,
} from "../../scripts/verification/bench/throughput/baselineProtocol";
import { MIN_POLL_MS } from "../../dev/src/local/pollingBackoff";

const roles = {
  workQueues: ["work-items"],
  resultsQueues: ["work-results"],
  leaseContainers: ["leases"],
  stateContainers: ["coordinator-state"],
  inputContainers: ["job-inputs"],
  systemContainers: ["coordinator-system"],
};

function count(partial: Partial<RequestCount>): RequestCount {
  return {
    atMs: 0,
    source: "app",
    service: "queue",
    method: "GET",
    name: "work-items",
    path: "messages",
    comp: "",
    leaseAction: "",
    status: 200,
    empty: false,
    requests: 1,
    messages: 0,
    ...partial,
  };
}

describe("throughput benchmark: pure parts (unit)", () => {
  it("packs units as dispatch does: at most maxItems, within maxBytes with the envelope, a large item alone", () => {
    const small = Array.from({ length: 100 }, (_, i) => ({ inline: `row,${i}` }));
    expect(
      packUnits(small, { maxItems: 32, maxBytes: 46_080 }, 100).map((unit) => [unit.first, unit.inputs.length]),
    ).toEqual([
      [0, 32],
      [32, 32],
      [64, 32],
      [96, 4],
    ]);
    const wide = { inline: "x".repeat(1988) }; // JSON {"inline":"…"} is 2,001 bytes; with its comma 2,002
    const units = packUnits([wide, wide, wide], { maxItems: 32, maxBytes: 100 + 2 * 2002 }, 100);
    expect(units.map((unit) => unit.inputs.length)).toEqual([2, 1]);
    const huge = { inline: "y".repeat(50_000) };
    expect(
      packUnits([{ inline: "a" }, huge, { inline: "b" }], { maxItems: 32, maxBytes: 46_080 }, 100).map((unit) => [
        unit.first,
        unit.inputs.length,
      ]),
    ).toEqual([
      [0, 1],
      [1, 1],
      [2, 1],
    ]);
  });

  it("prices requests by class: queue, blob write (and list, create container), read/other, free deletes", () => {
    expect(priceClassOf(count({ service: "queue", method: "DELETE" }))).toBe("queue");
    expect(priceClassOf(count({ service: "blob", method: "PUT", path: "jobs/{id}/spec.json" }))).toBe("blobWrite");
    expect(priceClassOf(count({ service: "blob", method: "PUT", path: "" }))).toBe("blobWrite");
    expect(priceClassOf(count({ service: "blob", method: "GET", path: "", comp: "list" }))).toBe("blobWrite");
    expect(
      priceClassOf(count({ service: "blob", method: "PUT", path: "MyLeaderCoordinatorTask", comp: "lease" })),
    ).toBe("blobReadOther");
    expect(priceClassOf(count({ service: "blob", method: "GET", path: "x.csv" }))).toBe("blobReadOther");
    expect(priceClassOf(count({ service: "blob", method: "DELETE", path: "inbox/{id}" }))).toBe("free");
    const byClass = requestsByPriceClass([
      count({ requests: 4 }),
      count({ service: "blob", method: "PUT", path: "a", requests: 2 }),
      count({ service: "blob", method: "HEAD", path: "a", requests: 10 }),
    ]);
    expect(byClass).toEqual({ queue: 4, blobWrite: 2, blobReadOther: 10, free: 0 });
    // 1,000 items: ×1,000 to a million; 4 queue ops → $0.0016, 2 writes → $0.011, 10 reads → $0.0044, 5 executions →
    // $0.002
    const cost = costPerMillion(byClass, 5, 1000, 2, 6);
    expect(cost.storageUSD).toBeCloseTo(0.0016 + 0.011 + 0.0044, 4);
    expect(cost.executionsUSD).toBeCloseTo(0.002, 4);
    expect(cost.totalUSD).toBeCloseTo(0.019, 4);
    expect(cost.computeEstimateUSD).toBeCloseTo(2 * 1000 * 0.000026, 4);
    expect(cost.allInUSD).toBeCloseTo(0.019 + 0.052, 4);
    expect(cost.computeUpperUSD).toBeCloseTo(6 * 1000 * 0.000026, 4);
    expect(costPerMillion(byClass, 5, 1000).allInUSD).toBeUndefined();
  });

  it("bounds execution time from above by billing each execution alone, at least 1 s, rounded up to 100 ms", () => {
    const intervals: [number, number][][] = [
      [
        [0, 300],
        [100, 500],
        [2000, 3450],
      ],
      [[0, 50]],
    ];
    // Activity periods: [0, 500] → 1 s, [2000, 3450] → 1.5 s, [0, 50] → 1 s; alone: 1 + 1 + 1.5 + 1.
    expect(billedGbSeconds(intervals)).toBeCloseTo(3.5 * 2, 6);
    expect(perExecutionGbSeconds(intervals)).toBeCloseTo(4.5 * 2, 6);
  });

  it("estimates the peers from their published prices: Step Functions Express per 32-item batch, Durable Functions per activity", () => {
    const [express, durable] = peerEstimates();
    // ($1.00 + 1e6 × 0.1 s × 0.0625 GB × $0.06/3600 per GB-s) per million executions ÷ 32
    expect(express?.usdPerMillionItems).toBeCloseTo((1 + 1e6 * 0.1 * 0.0625 * (0.06 / 3600)) / 32, 4);
    expect(express?.usdPerMillionItems).toBeCloseTo(0.0345, 4);
    // 5 queue transactions at $0.40/M + 1 execution at $0.40/M
    expect(durable?.usdPerMillionItems).toBe(2.4);
    expect(
      [express, durable].every((peer) => peer !== undefined && peer.sources.every((url) => url.startsWith("https://"))),
    ).toBe(true);
  });

  it("bills execution time per instance: overlapping invocations once, each busy period at least 1 s, rounded up to 100 ms, × 2 GB", () => {
    expect(
      billedGbSeconds([
        [
          [0, 300],
          [100, 500],
          [2000, 3450],
        ],
        [[0, 50]],
      ]),
    ).toBeCloseTo((1 + 1.5 + 1) * 2, 6);
  });

  it("describes requests: path-style Azurite URLs, queue messages, lease actions, ids folded", () => {
    const queue = "http://127.0.0.1:10001/devstoreaccount1";
    expect(queueEndpointOf(`DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;QueueEndpoint=${queue};`)).toBe(
      queue,
    );
    expect(describeRequest("queue", "delete", `${queue}/work-items/messages/abc?popreceipt=x`, undefined)).toEqual({
      service: "queue",
      method: "DELETE",
      name: "work-items",
      path: "message",
      comp: "",
      leaseAction: "",
    });
    expect(
      describeRequest(
        "blob",
        "PUT",
        "http://127.0.0.1:10000/devstoreaccount1/leases/MyLeaderCoordinatorTask?comp=lease",
        "renew",
      ),
    ).toMatchObject({ name: "leases", comp: "lease", leaseAction: "renew" });
    expect(
      describeRequest(
        "blob",
        "GET",
        "https://acct.blob.core.windows.net/coordinator-system/jobs/0b7e4f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b/items/12.json",
        undefined,
      ),
    ).toMatchObject({ name: "coordinator-system", path: "jobs/{id}/items/{n}.json" });
  });

  it("reports a scenario's ratios, round by round against the batched loop, per-item figures and targets", () => {
    const sample = (
      round: number,
      itemsPerS: number,
      counts: RequestCount[],
      executions: Record<string, number>,
      gbSeconds?: number,
    ): RunSample => ({
      round,
      order: 1,
      ok: true,
      items: 10_000,
      itemsPerS,
      submitToFirstDispatchS: 0.5,
      submitToCompletedS: 10_000 / itemsPerS,
      counts,
      executions,
      gbSeconds,
      gbSecondsUpper: gbSeconds === undefined ? undefined : gbSeconds * 3,
      loadAverage1m: [1, 1],
    });
    // 2 rounds of 10,000 items: 800 queue operations (0.04 per item), 60 executions, 8 GB-s.
    const project = summarizeImplementation(
      [
        sample(1, 900, [count({ requests: 400 })], { worker: 25, coordinator: 1, wake: 4 }, 4),
        sample(2, 600, [count({ requests: 400 })], { worker: 25, coordinator: 1, wake: 4 }, 4),
      ],
      roles,
    );
    const perItem = summarizeImplementation([sample(1, 100, [count({ requests: 40_000 })], { worker: 10_000 })], roles);
    const batched = summarizeImplementation(
      [
        sample(1, 1000, [count({ requests: 300 })], { worker: 25 }),
        sample(2, 800, [count({ requests: 300 })], { worker: 25 }),
      ],
      roles,
    );
    // The idle pair ran in round 2 only: the app at 480 items/s, the loop at 500 (their back-off at 2 s when the job
    // came); the idle app's figures are its own, not the project's.
    const idleProject = summarizeImplementation(
      [sample(2, 480, [count({ requests: 500 })], { worker: 25, wake: 5 }, 6)],
      roles,
    );
    const idleBatched = summarizeImplementation([sample(2, 500, [count({ requests: 300 })], { worker: 25 })], roles);
    const report = scenarioReport("small", 10_000, 100, { project, perItem, batched, idleProject, idleBatched });
    expect(report.ratioVsPerItem).toBe(7.5); // medians: 750 / 100
    expect(report.ratioVsBatched).toBe(0.833); // 750 / 900
    expect(report.roundRatiosVsBatched.rounds).toEqual([
      { round: 1, ratio: 0.9 },
      { round: 2, ratio: 0.75 },
    ]);
    expect(report.roundRatiosVsBatched).toMatchObject({ median: 0.825, min: 0.75 });
    // The idle pair's ratio: round 2 only, 480 / 500; beside the targets, not one of them.
    expect(report.roundRatiosIdle).toMatchObject({ rounds: [{ round: 2, ratio: 0.96 }], median: 0.96 });
    expect(report.itemsPerS).toEqual({ project: 750, perItem: 100, batched: 900, idleProject: 480, idleBatched: 500 });
    expect(report.idleProject.opsPerItem).toBe(0.05);
    expect(scenarioTable("small", report)).toContain(
      "  idle app ÷ idle loop (both idle first), round by round: r2 0.96× (median 0.96, lowest 0.96)",
    );
    expect(report.opsPerItem).toBe(0.04);
    expect(report.executionsPerItem).toBe(0.003);
    // Per million: 40,000 queue operations × $0.40/M, 3,000 executions × $0.40/M, 400 GB-s × $0.000026.
    expect(report.costPerMillionItemsUSD).toBeCloseTo(0.016 + 0.0012, 4);
    expect(report.allInCostPerMillionItemsUSD).toBeCloseTo(0.016 + 0.0012 + 0.0104, 4);
    expect(report.project.cost.computeUpperUSD).toBeCloseTo(0.0312, 4);
    expect(Object.fromEntries(Object.entries(report.targets).map(([name, check]) => [name, check.met]))).toEqual({
      ratioVsPerItem: true,
      // Issue 35 (issue 24's decisions): the ratio to the batched loop and the all-in USD are reported, not targets.
      opsPerItem: true,
      executionsPerItem: true,
      submitToFirstDispatchMedianS: true,
    });
    // Without the per-item loop, its ratio is not a target; an earlier run sets the blob and short scenarios' bars.
    const none = summarizeImplementation([], roles);
    const before = {
      source: "before.json",
      startedAt: undefined,
      itemsPerS: 700,
      roundRatioVsBatchedMedian: 0.85,
      submitToCompletedMedianS: 15,
      opsPerItem: 0.1,
      allInUSDPerMillion: 0.1,
    };
    const withoutOthers = { project, perItem: none, batched, idleProject: none, idleBatched: none };
    const blob = scenarioReport("blob", 10_000, 100, withoutOthers, before);
    expect(blob.targets).toEqual({
      roundRatioVsBatchedNotBelowBefore: { target: "≥ 0.85× (before)", value: 0.825, met: false },
      submitToFirstDispatchMedianS: { target: "≤ 2 s", value: 0.5, met: true },
    });
    const short = scenarioReport("short", 10_000, 100, withoutOthers, before);
    // Completed in 11.11 s and 16.67 s: median 13.89 s.
    expect(short.targets).toEqual({
      submitToCompletedNotAfterBefore: { target: "≤ 15 s (before)", value: 13.89, met: true },
    });
  });

  it("runs each ratio's two sides next to each other in every round, the per-item loop after them", () => {
    // Each ratio's two sides are measured back to back, whoever goes first alternating; the per-item loop (minutes at
    // 20,000 items) never sits between them, where the machine's load may change (a run's round 1: the project at a
    // load average of 5.3, the batched loop 9 minutes later at 2.1, 0.23×).
    const orders = [1, 2, 3, 4].map((roundNo) => roundOrder(roundNo, 2));
    expect(orders).toEqual([
      ["project", "batched", "idleProject", "idleBatched", "perItem"],
      ["batched", "project", "idleBatched", "idleProject", "perItem"],
      ["project", "batched", "idleProject", "idleBatched"],
      ["batched", "project", "idleBatched", "idleProject"],
    ]);
    for (const order of orders) {
      expect(Math.abs(order.indexOf("project") - order.indexOf("batched"))).toBe(1);
      expect(Math.abs(order.indexOf("idleProject") - order.indexOf("idleBatched"))).toBe(1);
    }
  });

  it("idles the idle pair until their queue polling's back-off waits its longest", () => {
    // The loop's workers poll as the local host's queue triggers do: from 100 ms up to host.json's maxPollingInterval.
    expect(POLL_MIN_MS).toBe(MIN_POLL_MS);
    const hostJson = JSON.parse(readFileSync("host.json", "utf8")) as {
      extensions: { queues: { maxPollingInterval: string } };
    };
    expect(hostJson.extensions.queues.maxPollingInterval).toBe("00:00:02");
    expect(POLL_MAX_MS).toBe(2000);
    // The loop's workers back off 100 ms doubling with ±20 % jitter (withJitter(delay, 0.2)); the local host's queue
    // triggers follow the queues extension (100 ms + 2^(n−1) × 100 ms, ±20 %: dev/src/local/pollingBackoff.ts), which
    // reaches the longest wait sooner (2,300 ms at +20 %). By IDLE_LOOP_MS every wait before the longest has passed on
    // both sides even at +20 %, so the job comes to pollers that poll every 2 s.
    const delays = pollDelaysMs();
    let beforeLongest = 0;
    for (let wait = delays.next(); wait < POLL_MAX_MS; wait = delays.next()) beforeLongest += wait * 1.2;
    expect(beforeLongest).toBeCloseTo(3720, 6);
    expect(IDLE_LOOP_MS).toBeGreaterThan(beforeLongest);
    // Not much more: every extra second of idling is a second of the round.
    expect(IDLE_LOOP_MS).toBeLessThan(beforeLongest + POLL_MAX_MS);
  });

  it("prints '—' for an implementation that did not run (--per-item-rounds 0), not zero operations and dollars", () => {
    const ran: RunSample = {
      round: 1,
      order: 1,
      ok: true,
      items: 1000,
      itemsPerS: 500,
      submitToFirstDispatchS: 0.5,
      submitToCompletedS: 2,
      counts: [count({ requests: 40 })],
      executions: { worker: 3 },
      gbSeconds: 2,
      gbSecondsUpper: 6,
      loadAverage1m: [1, 1],
    };
    const summary = summarizeImplementation([ran], roles);
    const report = scenarioReport("small", 1000, 91, {
      project: summary,
      perItem: summarizeImplementation([], roles),
      batched: summary,
      idleProject: summary,
      idleBatched: summary,
    });
    const cells = (label: string): string[] =>
      (scenarioTable("small", report).find((line) => line.trimStart().startsWith(label)) ?? "")
        .slice(label.length + 2)
        .trim()
        .split(/\s+/);
    for (const label of ["storage ops per item", "executions per item", "USD per million items"])
      expect(cells(label), label).toEqual([
        expect.not.stringMatching(/—/),
        "—",
        expect.not.stringMatching(/—/),
        expect.not.stringMatching(/—/),
        expect.not.stringMatching(/—/),
      ]);
  });

  it("pairs rounds for the ratio: only rounds both completed, in round order", () => {
    expect(
      roundRatios(
        [
          { round: 3, ok: true, itemsPerS: 50 },
          { round: 1, ok: true, itemsPerS: 90 },
          { round: 2, ok: false, itemsPerS: undefined },
        ],
        [
          { round: 1, ok: true, itemsPerS: 100 },
          { round: 2, ok: true, itemsPerS: 100 },
          { round: 3, ok: true, itemsPerS: 40 },
        ],
      ),
    ).toEqual([
      { round: 1, ratio: 0.9 },
      { round: 3, ratio: 1.25 },
    ]);
  });

  it("reads an earlier report's figures per scenario, and nothing for what it lacks", () => {
    const path = join(mkdtempSync(join(tmpdir(), "bench-before-")), "before.json");
    writeFileSync(
      path,
      JSON.stringify({
        startedAt: "2026-11-25T00:00:00.000Z",
        scenarios: {
          small: {
            opsPerItem: 0.138,
            submitToCompletedS: { median: 5.1 },
            roundRatiosVsBatched: { median: 0.8 },
            project: { itemsPerS: 3930, cost: { allInUSD: 0.16 } },
          },
          blob: { project: { itemsPerS: 616 } },
        },
      }),
    );
    const before = readBefore(path);
    expect(before("small")).toEqual({
      source: path,
      startedAt: "2026-11-25T00:00:00.000Z",
      itemsPerS: 3930,
      roundRatioVsBatchedMedian: 0.8,
      submitToCompletedMedianS: 5.1,
      opsPerItem: 0.138,
      allInUSDPerMillion: 0.16,
    });
    expect(before("blob")).toMatchObject({ itemsPerS: 616, roundRatioVsBatchedMedian: undefined });
    expect(before("short")).toBeUndefined();
  });

  it("generates scenarios of the stated size: small items of about 100 bytes inline, blob items naming one blob each", () => {
    const small = scenarioJob("small", 500, "p");
    expect(small.items.every((item) => "inline" in item)).toBe(true);
    expect(meanItemBytes(small)).toBeGreaterThan(80);
    expect(meanItemBytes(small)).toBeLessThan(110);
    const blob = scenarioJob("blob", 20, "p");
    expect(blob.items.map((item) => ("blob" in item ? item.blob : ""))).toEqual(blob.blobs.map((entry) => entry.name));
    expect(Object.values(small.expected).reduce((sum, stats) => sum + stats.count, 0)).toBe(500 * 6);
    const short = scenarioJob("short", 200, "p");
    expect(short.items).toHaveLength(200);
    expect(short.items.every((item) => "inline" in item)).toBe(true);
  });

  it("refuses a bad command line naming the flag and what is allowed", () => {
    expect(() => parseThroughputArgs(["--small-items", "5"])).toThrow(
      new UsageError('--small-items must be a whole number from 100 to 200000, got "5".'),
    );
    expect(() => parseThroughputArgs(["--schedule", "* * *"])).toThrow(
      /--schedule must be an NCRONTAB expression with six fields/,
    );
    expect(() => parseThroughputArgs(["--per-item-rounds", "11"])).toThrow(
      new UsageError('--per-item-rounds must be a whole number from 0 to 10, got "11".'),
    );
    expect(parseThroughputArgs([])).toMatchObject({
      smallItems: 20_000,
      blobItems: 2000,
      shortItems: 200,
      rounds: 5,
      perItemRounds: 1,
      before: undefined,
      schedule: "0 * * * * *",
      memoryItems: 100_000,
    });
    expect(parseThroughputArgs(["--before", "bench-results/a.json"]).before).toBe("bench-results/a.json");
  });

  it("parses /proc's stat and schedstat: CPU ticks after the command name, whatever it holds, and the run-queue wait", () => {
    // A process named "a) b" (the name may hold spaces and parentheses): utime 250 and stime 30 ticks, fields 14–15.
    const stat = "4242 (a) b) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 30 0 0 20 0 11 0 1234 0 0";
    expect(parseCpuTimes(stat, "1500000000 420000000 77\n")).toEqual({ cpuS: 2.8, runQueueWaitS: 0.42 });
    expect(parseCpuTimes("4242 (node S 1", "1 2 3")).toBeUndefined();
    expect(parseCpuTimes(stat, "garbage")).toBeUndefined();
  });

  it("sums the processes' CPU figures, and reports none when any process's is missing, not a smaller sum", () => {
    expect(sumOf([1.234, 2, 0.5])).toBe(3.73);
    expect(sumOf([1, undefined, 2])).toBeUndefined();
    expect(sumOf([])).toBeUndefined();
  });

  it("reads a process's CPU time and its main thread's run-queue wait from /proc (Linux)", () => {
    const before = readCpuTimes(process.pid);
    expect(before).toBeDefined();
    const cpuBefore = process.cpuUsage();
    let spin = 0;
    while ((process.cpuUsage(cpuBefore).user + process.cpuUsage(cpuBefore).system) / 1e6 < 0.3) spin++;
    const after = readCpuTimes(process.pid);
    expect(spin).toBeGreaterThan(0);
    // 0.3 s of CPU spent, in clock ticks of 10 ms (and other threads may add a little).
    expect((after?.cpuS ?? 0) - (before?.cpuS ?? 0)).toBeGreaterThanOrEqual(0.28);
    expect(after?.runQueueWaitS).toBeGreaterThanOrEqual(before?.runQueueWaitS ?? Number.POSITIVE_INFINITY);
    expect(readCpuTimes(2 ** 22 + 1)).toBeUndefined();
  });
});
