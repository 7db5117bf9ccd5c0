import { describe, expect, it } from "vitest";
import {
  limitViolations,
  maxConcurrency,
  maxStartsInWindow,
  measurePools,
  type Run,
} from "../../scripts/verification/chaos/limits/limitMeasure";

const run = (startMs: number, endMs: number | undefined, key = "a"): Run => ({ key, startMs, endMs });

describe("flow-limits chaos measures (issue 42)", () => {
  it("counts the most runs at once, an end freeing its place before a start at the same moment", () => {
    expect(maxConcurrency([run(0, 100), run(100, 200), run(150, 300)], 1000)).toEqual({ max: 2, atMs: 150 });
    expect(maxConcurrency([run(0, 100), run(50, 60), run(55, 70)], 1000).max).toBe(3);
  });

  it("counts a run without an end as running until the given moment (its process died or froze)", () => {
    expect(maxConcurrency([run(0, undefined), run(500, 600)], 1000).max).toBe(2);
    expect(maxConcurrency([run(0, undefined), run(500, 600)], 400).max).toBe(1);
  });

  it("finds the fullest window of a period wherever it lies, not only aligned ones", () => {
    // Aligned 1 s windows hold 2 starts each; the window (0.9 s, 1.9 s] holds 4.
    const starts = [100, 950, 1000, 1100, 1850, 2500].map((ms) => run(ms, ms + 10));
    expect(maxStartsInWindow(starts, 1000)).toEqual({ max: 4, atMs: 1850 });
    // Two starts exactly a period apart are in no one window.
    expect(maxStartsInWindow([run(0, 1), run(1000, 1001)], 1000).max).toBe(1);
  });

  it("reports each pool over a limit, and none within them", () => {
    const runs = [run(0, 500, "a"), run(10, 500, "a"), run(20, 500, "b")];
    const pools = [
      { name: "kind", concurrency: 3, rate: { limit: 3, periodMs: 1000 }, counts: () => true },
      { name: "a", concurrency: 1, rate: { limit: 1, periodMs: 1000 }, counts: (one: Run) => one.key === "a" },
    ];
    const figures = measurePools(runs, pools, 1000);
    expect(figures.map((figure) => [figure.pool, figure.maxConcurrency, figure.maxStartsInWindow])).toEqual([
      ["kind", 3, 3],
      ["a", 2, 2],
    ]);
    const problems = limitViolations(figures);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toContain("pool a: 2 items running at once");
    expect(problems[1]).toContain("pool a: 2 starts in the 1 s window");
  });
});
