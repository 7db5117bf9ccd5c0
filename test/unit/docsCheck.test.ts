import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { documentedCommands, referencedCommands } from "../../scripts/verification/docsCheck";
import { checkCodeMentions } from "../../scripts/verification/docsCheck/codeMentions";
import { checkCliReference, checkFlags } from "../../scripts/verification/docsCheck/flags";
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

  it("finds a flag a command's --help lists that the CLI reference leaves out, and a command it has no section for", () => {
    const commands = [
      { name: "tool run", usage: "Usage: tool run [--fast] [--out DIR]\n  --fast   …\n  --out DIR   …\n  --help" },
      { name: "tool stop", usage: "Usage: tool stop [--now]" },
    ];
    const page = [
      "# CLI", // 1
      "## `tool run`", // 2
      "| Flag | |", // 3
      "| `--fast` | quick |", // 4
      "| `--help` | usage |", // 5
      "## Exit codes: `tool stop` and others", // 6
      "`--out` here is another section's", // 7
    ].join("\n");
    expect(checkCliReference("cli.md", page, commands)).toEqual([
      "cli.md:2: tool run --out: its --help lists it, its section does not",
      "cli.md:6: tool stop --now: its --help lists it, its section does not",
    ]);
    expect(checkCliReference("cli.md", "# CLI", commands.slice(1))).toEqual([
      "cli.md: no section's heading names `tool stop`",
    ]);
    expect(referencedCommands().map((command) => command.name)).toEqual([
      "azure-leader-coordinator enqueue",
      "azure-leader-coordinator-dev local",
      "azure-leader-coordinator-dev enqueue",
      "azure-leader-coordinator-dev package",
    ]);
  });

  it("finds a page of the docs, or a heading, that the code names and that does not exist", () => {
    const source = [
      "/** Takeover below the lease (docs/GUIDE.md#run-it; docs/GUIDE.md, A1). */",
      'throw new Error("see docs/HOST-JSON.md in azure-leader-coordinator");',
      "// docs/GUIDE.md#nowhere and mydocs/GONE.md (not a pointer into docs/)",
    ].join("\n");
    expect(checkCodeMentions(repo, "src/x.ts", source)).toEqual([
      { file: "src/x.ts", line: 2, mention: "docs/HOST-JSON.md", why: "no such page docs/HOST-JSON.md" },
      { file: "src/x.ts", line: 3, mention: "docs/GUIDE.md#nowhere", why: "no heading #nowhere in docs/GUIDE.md" },
    ]);
  });
});
