import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { emitDeclarations, installRuntime } from "../../scripts/verification/apiCheck/declarations";
import { apiEntries } from "../../scripts/verification/apiCheck/entries";
import { extractEntry } from "../../scripts/verification/apiCheck/extract";

const REPO = path.resolve(__dirname, "..", "..");

/**
 * `npm run api:check` (issue 44) on a package of its own, with the repository's review/ configuration: a new export
 * changes the report, an export without TSDoc is reported, and the repository's own entries are the ones reviewed
 * (that an unchanged API passes, `npm run lint` shows on the repository itself).
 */
describe("the API check", () => {
  const project = mkdtempSync(path.join(tmpdir(), "api-check-"));
  afterAll(() => rmSync(project, { recursive: true, force: true }));
  cpSync(path.join(REPO, "review", "api-extractor.json"), path.join(project, "review", "api-extractor.json"));
  cpSync(path.join(REPO, "review", "tsdoc.json"), path.join(project, "review", "tsdoc.json"));
  symlinkSync(path.join(REPO, "node_modules"), path.join(project, "node_modules"), "dir");
  writeFileSync(
    path.join(project, "package.json"),
    JSON.stringify({ name: "demo", tshy: { exports: { ".": "./src/index.ts" } } }),
  );
  writeFileSync(
    path.join(project, "tsconfig.json"),
    JSON.stringify({ compilerOptions: { module: "NodeNext", strict: true, types: [] }, include: ["src"] }),
  );
  mkdirSync(path.join(project, "src"));

  function check(source: string, update = false) {
    writeFileSync(path.join(project, "src", "index.ts"), source);
    const out = path.join(project, ".api-build");
    rmSync(out, { recursive: true, force: true });
    expect(emitDeclarations(project, out)).toEqual([]);
    installRuntime(project, out);
    const [entry] = apiEntries(project, ["."]);
    if (entry === undefined) throw new Error("no entry");
    return extractEntry(entry, { repo: project, declarationsDir: out, update });
  }

  it("fails a new export until the report is updated, and reports an export without TSDoc", () => {
    const documented = "/** Adds one. */\nexport function inc(n: number): number {\n  return n + 1;\n}\n";
    expect(check(documented, true).problems).toEqual([]);
    expect(readFileSync(path.join(project, "review", "demo.api.md"), "utf8")).toContain(
      "export function inc(n: number): number;",
    );

    const widened = `${documented}/** Adds two. */\nexport function inc2(n: number): number {\n  return n + 2;\n}\n`;
    expect(check(widened)).toMatchObject({ changed: true, problems: [] });

    const undocumented = `${documented}export const LIMIT = 3;\n`;
    expect(check(undocumented).problems).toEqual([
      expect.stringContaining('Missing documentation for "LIMIT". (ae-undocumented)'),
    ]);
  }, 120_000);

  it("reviews each public entry of both packages, and not ./internal", () => {
    expect(apiEntries(REPO).map((entry) => `${entry.reportName} ${entry.source}`)).toEqual([
      "azure-leader-coordinator src/index.ts",
      "azure-leader-coordinator-leader-election src/library/index.ts",
      "azure-leader-coordinator-dev dev/src/index.ts",
      "azure-leader-coordinator-dev-testing dev/src/testing/index.ts",
    ]);
  });
});
