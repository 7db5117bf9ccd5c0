import { describe, expect, it } from "vitest";
import { peakConcurrency, peakStarts, runLimitedJob } from "../support/flowHarness";

const keyed = (count: number, keys: readonly string[]) =>
  Array.from({ length: count }, (_, item) => `${keys[item % keys.length] ?? "k"}:${item}`);

describe("flow control: limits every worker obeys (issue 42)", () => {
  it("a kind's concurrency limit holds across units running at once on several workers", async () => {
    const { runs, job } = await runLimitedJob({ limits: { concurrency: 5 }, items: keyed(60, ["a"]), perUnit: 4 });
    expect(job?.status).toBe("completed");
    expect(job?.doneCount).toBe(60);
    expect(runs).toHaveLength(60);
    expect(peakConcurrency(runs)).toBeLessThanOrEqual(5);
    // Without the limit the same run has 3 workers × 4 units × 4 items at once: the limit is what held it.
    const free = await runLimitedJob({ items: keyed(60, ["a"]), perUnit: 4, deps: { workUnitMaxItems: 5 } });
    expect(peakConcurrency(free.runs)).toBeGreaterThan(5);
  });

  it("the limit holds across many rounds of units: what earlier passes granted is counted from the ledger", async () => {
    const { runs, job } = await runLimitedJob({
      limits: { concurrency: 6 },
      items: keyed(240, ["a"]),
      perUnit: 2,
      itemMs: 10,
    });
    expect(job?.doneCount).toBe(240);
    expect(peakConcurrency(runs)).toBeLessThanOrEqual(6);
    // It was not a trickle: several units ran at once, up to the limit.
    expect(peakConcurrency(runs)).toBe(6);
  });

  it("a kind's rate limit holds in every window of its period, not only aligned ones", async () => {
    const { runs, job } = await runLimitedJob({
      limits: { rate: { limit: 20, periodSeconds: 1 } },
      items: keyed(50, ["a"]),
      itemMs: 5,
    });
    expect(job?.doneCount).toBe(50);
    expect(peakStarts(runs, 1000)).toBeLessThanOrEqual(20);
  });

  it("a burst spreads the starts: at most burst in any window of period ÷ (limit ÷ burst)", async () => {
    const { runs, job } = await runLimitedJob({
      limits: { rate: { limit: 20, periodSeconds: 1, burst: 5 } },
      items: keyed(40, ["a"]),
      itemMs: 5,
    });
    expect(job?.doneCount).toBe(40);
    expect(peakStarts(runs, 250)).toBeLessThanOrEqual(5);
    expect(peakStarts(runs, 1000)).toBeLessThanOrEqual(20);
  });

  it("per-key limits hold for each key on its own, and the kind's limit over all of them", async () => {
    const { runs, job } = await runLimitedJob({
      limits: {
        concurrency: 6,
        key: (item) => (item.text ?? "").split(":")[0] ?? "",
        perKey: { concurrency: 2, rate: { limit: 8, periodSeconds: 1 } },
      },
      items: keyed(48, ["a", "b", "c"]),
      perUnit: 4,
    });
    expect(job?.doneCount).toBe(48);
    expect(peakConcurrency(runs)).toBeLessThanOrEqual(6);
    for (const key of ["a", "b", "c"]) {
      expect(peakConcurrency(runs, (run) => run.key === key)).toBeLessThanOrEqual(2);
      expect(peakStarts(runs, 1000, (run) => run.key === key)).toBeLessThanOrEqual(8);
    }
  });

  it("a job's own limits hold besides its kind's", async () => {
    const { runs, job } = await runLimitedJob({
      jobLimits: { concurrency: 3, rate: { limit: 25, periodSeconds: 1 } },
      items: keyed(40, ["a"]),
    });
    expect(job?.doneCount).toBe(40);
    expect(peakConcurrency(runs)).toBeLessThanOrEqual(3);
    expect(peakStarts(runs, 1000)).toBeLessThanOrEqual(25);
  });
});

describe("flow control: a long limited job (issue 42)", () => {
  it("ended grants kept for the status page do not count against the ledger's room: a job of more units than MAX_GRANTS ends", async () => {
    // 1,100 units of one item each: every grant ends (its result) long before the hour ended grants are kept for.
    const { job } = await runLimitedJob({
      limits: { concurrency: 50 },
      items: keyed(1100, ["a"]),
      perUnit: 1,
      itemMs: 0,
      batch: 32,
      deps: { workUnitMaxItems: 1 },
    });
    expect(job?.doneCount).toBe(1100);
    expect(job?.status).toBe("completed");
  }, 120_000);
});
