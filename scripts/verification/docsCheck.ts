/**
 * `npm run docs:check` (issue 44): the docs work where they are read.
 *
 * - Links: every link of every Markdown file a package ships (`npm pack --dry-run`: README, CHANGELOG, …) resolves for
 *   a user who installed it — a file the package ships, or a file of the repository by its absolute address — and so
 *   does every link of the repository's other Markdown files, within the repository; anchors name headings.
 * - Flags: every flag the docs show for a command (the bins `azure-leader-coordinator` and
 *   `azure-leader-coordinator-dev`, and this repository's `npm run local`, `enqueue` and `package`) is one that
 *   command's `--help` lists.
 *
 * Exit code 0 when everything resolves, 1 with each problem listed otherwise. Part of `npm run lint`.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { DEV_ENQUEUE_USAGE, DEV_PROGRAM } from "../../dev/src/cli/main";
import { RUNTIME_PROGRAM } from "../../src/cli/main";
import { USAGE as REPO_ENQUEUE_USAGE } from "../tools/enqueue";
import { checkFlags, type DocumentedCommand } from "./docsCheck/flags";
import { checkLinks, type LinkContext } from "./docsCheck/links";

const REPO = path.resolve(__dirname, "..", "..");

/** The repository's web address, from the runtime package's `repository` (git+https://…/name.git). */
export function repositoryUrl(): string {
  const manifest = JSON.parse(readFileSync(path.join(REPO, "package.json"), "utf8")) as {
    repository?: { url?: string };
  };
  return (manifest.repository?.url ?? "").replace(/^git\+/, "").replace(/\.git$/, "");
}

/** The files a package ships, from `npm pack --dry-run` (no build needed: the Markdown files do not depend on it). */
function shippedFiles(workspace?: string): Set<string> {
  const args = [
    "pack",
    "--dry-run",
    "--json",
    "--ignore-scripts",
    ...(workspace === undefined ? [] : ["--workspace", workspace]),
  ];
  const [info] = JSON.parse(
    execFileSync("npm", args, { cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }),
  ) as {
    files: { path: string }[];
  }[];
  return new Set((info?.files ?? []).map((file) => file.path));
}

/** The commands the docs may show, each with its usage. */
export function documentedCommands(): DocumentedCommand[] {
  const dev = DEV_PROGRAM.commands;
  const runtime = RUNTIME_PROGRAM.commands;
  return [
    ...Object.entries(dev).map(([name, command]) => ({
      name: `azure-leader-coordinator-dev ${name}`,
      pattern: new RegExp(`(?<![\\w/-])azure-leader-coordinator-dev\\s+${name}\\b`),
      usage: name === "enqueue" ? DEV_ENQUEUE_USAGE : command.usage,
    })),
    ...Object.entries(runtime).map(([name, command]) => ({
      name: `azure-leader-coordinator ${name}`,
      pattern: new RegExp(`(?<![\\w/-])azure-leader-coordinator\\s+${name}\\b`),
      usage: command.usage,
    })),
    ...Object.entries(RUNTIME_PROGRAM.movedCommands ?? {}).map(([name, moved]) => ({
      name: `azure-leader-coordinator ${name}`,
      pattern: new RegExp(`(?<![\\w/-])azure-leader-coordinator\\s+${name}\\b`),
      usage: undefined,
      missing: moved,
    })),
    { name: "npm run local", pattern: /npm run local\b(\s+--)?/, usage: dev.local?.usage },
    { name: "npm run enqueue", pattern: /npm run enqueue\b(\s+--)?/, usage: REPO_ENQUEUE_USAGE },
    { name: "npm run package", pattern: /npm run package\b(\s+--)?/, usage: dev.package?.usage },
  ];
}

/** The repository's tracked Markdown files (git ls-files), as absolute paths. */
function markdownFiles(): string[] {
  return execFileSync("git", ["ls-files", "*.md"], { cwd: REPO, encoding: "utf8" })
    .split("\n")
    .filter((file) => file !== "")
    .map((file) => path.join(REPO, file));
}

function main(): void {
  const repoUrl = repositoryUrl();
  const packages = [
    { root: REPO, files: shippedFiles() },
    { root: path.join(REPO, "dev"), files: shippedFiles("dev") },
  ];
  const commands = documentedCommands();
  const problems: string[] = [];
  let links = 0;
  let external = 0;
  for (const file of markdownFiles()) {
    const owner = packages.find(
      (pkg) => pkg.files.has(path.relative(pkg.root, file).split(path.sep).join("/")) && file.startsWith(pkg.root),
    );
    const context: LinkContext = { repo: REPO, repoUrl, ...(owner === undefined ? {} : { shipped: owner }) };
    const report = checkLinks(file, context);
    links += report.checked;
    external += report.external;
    for (const broken of report.broken)
      problems.push(
        `${broken.file}:${broken.line}: link ${broken.target}: ${broken.why}${owner === undefined ? "" : " (a shipped file)"}`,
      );
    for (const flag of checkFlags(path.relative(REPO, file), readFileSync(file, "utf8"), commands))
      problems.push(
        `${flag.file}:${flag.line}: ${flag.command}${flag.flag === "" ? "" : ` ${flag.flag}`}: ${flag.why}`,
      );
  }
  const shipped = packages.map((pkg) => [...pkg.files].filter((name) => name.endsWith(".md")).length);
  process.stdout.write(
    `Docs: ${markdownFiles().length} Markdown files (${shipped.join(" + ")} shipped), ${links} links (${external} to other sites, not fetched), flags of ${commands.length} commands.\n`,
  );
  if (problems.length === 0) return;
  process.stderr.write(`${problems.join("\n")}\n${problems.length} problem(s).\n`);
  process.exitCode = 1;
}

if (require.main === module) main();
