import { describe, expect, it } from "vitest";
import { billedGbSeconds, costPerMillion, priceClassOf, requestsByPriceClass } from "../../scripts/throughput/cost";
import { parseThroughputArgs, UsageError } from "../../scripts/throughput/cli";
import { describeRequest, queueEndpointOf, type RequestCount } from "../../scripts/throughput/requestCounter";
import { scenarioReport, summarizeImplementation, type RunSample } from "../../scripts/throughput/report";
import { meanItemBytes, scenarioJob } from "../../scripts/throughput/scenarios";
import { packUnits } from "../../scripts/throughput/units";

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
    const cost = costPerMillion(byClass, 5, 1000, 2);
    expect(cost.storageUSD).toBeCloseTo(0.0016 + 0.011 + 0.0044, 4);
    expect(cost.executionsUSD).toBeCloseTo(0.002, 4);
    expect(cost.totalUSD).toBeCloseTo(0.019, 4);
    expect(cost.computeEstimateUSD).toBeCloseTo(2 * 1000 * 0.000026, 4);
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

  it("reports a scenario's ratios, per-item figures and targets from its rounds", () => {
    const sample = (itemsPerS: number, counts: RequestCount[], executions: Record<string, number>): RunSample => ({
      round: 1,
      order: 1,
      ok: true,
      items: 1000,
      itemsPerS,
      submitToFirstDispatchS: 0.5,
      submitToCompletedS: 1000 / itemsPerS,
      counts,
      executions,
      gbSeconds: undefined,
      loadAverage1m: [1, 1],
    });
    const project = summarizeImplementation(
      [sample(900, [count({ requests: 300 })], { worker: 32, coordinator: 1, wake: 1 })],
      roles,
    );
    const perItem = summarizeImplementation([sample(100, [count({ requests: 4000 })], { worker: 1000 })], roles);
    const batched = summarizeImplementation([sample(1000, [count({ requests: 150 })], { worker: 32 })], roles);
    const report = scenarioReport("small", 1000, 100, { project, perItem, batched });
    expect(report.ratioVsPerItem).toBe(9);
    expect(report.ratioVsBatched).toBe(0.9);
    expect(report.opsPerItem).toBe(0.3);
    expect(report.executionsPerItem).toBe(0.034);
    expect(report.submitToFirstDispatchS.median).toBe(0.5);
    expect(Object.values(report.targets).every((target) => target.met)).toBe(true);
    expect(report.costPerMillionItemsUSD).toBeCloseTo(300 * 0.4e-3 + 34 * 0.4e-3, 4);
  });

  it("generates scenarios of the stated size: small items of about 100 bytes inline, blob items naming one blob each", () => {
    const small = scenarioJob("small", 500, "p");
    expect(small.items.every((item) => "inline" in item)).toBe(true);
    expect(meanItemBytes(small)).toBeGreaterThan(80);
    expect(meanItemBytes(small)).toBeLessThan(110);
    const blob = scenarioJob("blob", 20, "p");
    expect(blob.items.map((item) => ("blob" in item ? item.blob : ""))).toEqual(blob.blobs.map((entry) => entry.name));
    expect(Object.values(small.expected).reduce((sum, stats) => sum + stats.count, 0)).toBe(500 * 6);
  });

  it("refuses a bad command line naming the flag and what is allowed", () => {
    expect(() => parseThroughputArgs(["--small-items", "5"])).toThrow(
      new UsageError('--small-items must be a whole number from 100 to 200000, got "5".'),
    );
    expect(() => parseThroughputArgs(["--schedule", "* * *"])).toThrow(
      /--schedule must be an NCRONTAB expression with six fields/,
    );
    expect(parseThroughputArgs([])).toMatchObject({
      smallItems: 20_000,
      blobItems: 2000,
      rounds: 3,
      schedule: "0 * * * * *",
      memoryItems: 100_000,
    });
  });
});
