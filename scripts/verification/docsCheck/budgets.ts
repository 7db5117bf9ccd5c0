/**
 * Checks the docs' size budgets (issue 45): every page at most {@link PAGE_MAX_BYTES}, and the user docs — the pages
 * of `docs/` outside `docs/contributing/` — together at most {@link USER_DOCS_MAX_BYTES}. A reader who must find one
 * paragraph gets short pages; what does not fit goes to a contributor page, or to the history in `bench-results/`.
 */

/** Most bytes a Markdown page may have (15 KB). */
export const PAGE_MAX_BYTES = 15_000;

/** Most bytes the user docs may have together (150 KB). */
export const USER_DOCS_MAX_BYTES = 150_000;

/** A Markdown file of the repository and its size. */
export interface PageSize {
  /** Relative to the repository, with `/`. */
  file: string;
  bytes: number;
}

/** api-extractor's generated API reports (`review/*.api.md`, `npm run api:check`): declarations, as long as the API. */
export function isApiReport(file: string): boolean {
  return file.startsWith("review/");
}

/**
 * Files with no page budget: the changelog and the benchmarks' history grow with every version by design, and the
 * API reports are generated ({@link isApiReport}).
 */
export function isExempt(file: string): boolean {
  return file === "CHANGELOG.md" || file.startsWith("bench-results/") || isApiReport(file);
}

/** A page of the user docs: `docs/` but not `docs/contributing/`. */
export function isUserDoc(file: string): boolean {
  return file.startsWith("docs/") && !file.startsWith("docs/contributing/");
}

/** What {@link checkBudgets} found. */
export interface BudgetReport {
  problems: string[];
  userBytes: number;
  userPages: number;
}

/** Checks every page against {@link PAGE_MAX_BYTES} and the user docs' total against {@link USER_DOCS_MAX_BYTES}. */
export function checkBudgets(
  pages: readonly PageSize[],
  limits: { pageMaxBytes: number; userDocsMaxBytes: number } = {
    pageMaxBytes: PAGE_MAX_BYTES,
    userDocsMaxBytes: USER_DOCS_MAX_BYTES,
  },
): BudgetReport {
  const problems: string[] = [];
  for (const page of pages)
    if (!isExempt(page.file) && page.bytes > limits.pageMaxBytes)
      problems.push(
        `${page.file}: ${page.bytes} bytes; a page may have at most ${limits.pageMaxBytes}: split it, or move the history to bench-results/HISTORY.md and the depth to docs/contributing/`,
      );
  const user = pages.filter((page) => isUserDoc(page.file));
  const userBytes = user.reduce((sum, page) => sum + page.bytes, 0);
  if (userBytes > limits.userDocsMaxBytes)
    problems.push(
      `the user docs (docs/ but docs/contributing/) have ${userBytes} bytes in ${user.length} pages; together they may have at most ${limits.userDocsMaxBytes}`,
    );
  return { problems, userBytes, userPages: user.length };
}
