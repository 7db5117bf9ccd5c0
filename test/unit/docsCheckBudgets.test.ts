import { describe, expect, it } from "vitest";
import { checkBudgets, PAGE_MAX_BYTES, USER_DOCS_MAX_BYTES } from "../../scripts/verification/docsCheck/budgets";

/** `npm run docs:check`'s budgets (issue 45): 15 KB a page, 150 KB of user docs together. */
describe("the docs' budgets", () => {
  it("are 15 KB a page and 150 KB of user docs", () => {
    expect([PAGE_MAX_BYTES, USER_DOCS_MAX_BYTES]).toEqual([15_000, 150_000]);
  });

  it("name a page past 15 KB, user or contributor, and spare the changelog, the benchmarks' history and the generated API reports", () => {
    const report = checkBudgets([
      { file: "docs/how-to/deploy.md", bytes: 15_000 },
      { file: "docs/COST.md", bytes: 69_040 },
      { file: "docs/contributing/simulation.md", bytes: 15_001 },
      { file: "README.md", bytes: 16_000 },
      { file: "CHANGELOG.md", bytes: 90_000 },
      { file: "bench-results/HISTORY.md", bytes: 90_000 },
      { file: "review/azure-leader-coordinator.api.md", bytes: 40_000 },
    ]);
    expect(report.problems).toEqual([
      "docs/COST.md: 69040 bytes; a page may have at most 15000: split it, or move the history to bench-results/HISTORY.md and the depth to docs/contributing/",
      "docs/contributing/simulation.md: 15001 bytes; a page may have at most 15000: split it, or move the history to bench-results/HISTORY.md and the depth to docs/contributing/",
      "README.md: 16000 bytes; a page may have at most 15000: split it, or move the history to bench-results/HISTORY.md and the depth to docs/contributing/",
    ]);
  });

  it("count the user docs (docs/ but docs/contributing/) together, and name a total past 150 KB", () => {
    const pages = Array.from({ length: 11 }, (_, index) => ({
      file: `docs/reference/page-${index}.md`,
      bytes: 14_000,
    }));
    const contributor = { file: "docs/contributing/architecture.md", bytes: 14_000 };
    const within = checkBudgets([...pages.slice(0, 10), contributor, { file: "README.md", bytes: 14_000 }]);
    expect(within).toEqual({ problems: [], userBytes: 140_000, userPages: 10 });
    expect(checkBudgets([...pages, contributor]).problems).toEqual([
      "the user docs (docs/ but docs/contributing/) have 154000 bytes in 11 pages; together they may have at most 150000",
    ]);
  });
});
