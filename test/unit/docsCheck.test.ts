import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { documentedCommands } from "../../scripts/verification/docsCheck";
import { checkFlags } from "../../scripts/verification/docsCheck/flags";
import { checkLinks } from "../../scripts/verification/docsCheck/links";

/** `npm run docs:check` (issue 44): each check finds what it names in a small repository of its own. */
describe("the docs checks", () => {
  const repo = mkdtempSync(path.join(tmpdir(), "docs-check-"));
  const repoUrl = "https://github.com/owner/name";
  mkdirSync(path.join(repo, "docs"));
  writeFileSync(path.join(repo, "docs", "GUIDE.md"), "# Guide\n\n## Run it\n");
  afterAll(() => rmSync(repo, { recursive: true, force: true }));

  function links(text: string, shipped?: string[]): string[] {
    const file = path.join(repo, "README.md");
    writeFileSync(file, text);
    const context = {
      repo,
      repoUrl,
      ...(shipped === undefined ? {} : { shipped: { root: repo, files: new Set(shipped) } }),
    };
    return checkLinks(file, context).broken.map((broken) => `${broken.line} ${broken.target}: ${broken.why}`);
  }

  it("finds a missing file, a missing heading and a link a package's reader cannot follow", () => {
    const text = [
      "[ok](docs/GUIDE.md#run-it) [gone](docs/GONE.md) [anchor](docs/GUIDE.md#nowhere)",
      `[abs](${repoUrl}/blob/main/docs/GUIDE.md) [abs-gone](${repoUrl}/blob/main/docs/GONE.md)`,
      "`[in code](docs/GONE.md)`",
    ].join("\n");
    expect(links(text)).toEqual([
      "1 docs/GONE.md: no such file docs/GONE.md",
      "1 docs/GUIDE.md#nowhere: no heading #nowhere in docs/GUIDE.md",
      `2 ${repoUrl}/blob/main/docs/GONE.md: no such file docs/GONE.md in the repository`,
    ]);
    // Shipped, README.md alone: a relative link to a file the tarball lacks is dead for an installed reader.
    expect(links("[guide](docs/GUIDE.md) [me](README.md)", ["README.md"])).toEqual([
      "1 docs/GUIDE.md: the package does not ship it: link it absolutely, into the repository",
    ]);
  });

  it("finds a flag a command's --help does not list, and a command that moved", () => {
    const commands = documentedCommands();
    const doc = [
      "```bash",
      "npx azure-leader-coordinator-dev local --instances 3 \\",
      "  --no-such-flag 1",
      "npx azure-leader-coordinator enqueue --url U --file job.json --wait",
      "npx azure-leader-coordinator local --job job.json",
      "```",
    ].join("\n");
    const found = checkFlags("DOC.md", doc, commands).map((flag) => `${flag.line} ${flag.command} ${flag.flag}`.trim());
    expect(found).toEqual(["2 azure-leader-coordinator-dev local --no-such-flag", "5 azure-leader-coordinator local"]);
  });
});
