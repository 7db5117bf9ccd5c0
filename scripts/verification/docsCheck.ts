/**
 * `npm run docs:check` (issues 44 and 45): the docs work where they are read, and stay a size a reader can use.
 *
 * - Links: every link of every Markdown file a package ships (`npm pack --dry-run`: README, CHANGELOG, …) resolves for
 *   a user who installed it — a file the package ships, or a file of the repository by its absolute address — and so
 *   does every link of the repository's other Markdown files, within the repository; anchors name headings. So does
 *   every `docs/….md` the code names (messages, comments, templates, tests).
 * - Flags: every flag the docs show for a command (the bins `azure-leader-coordinator` and
 *   `azure-leader-coordinator-dev`, and this repository's `npm run local`, `enqueue` and `package`) is one that
 *   command's `--help` lists; and the CLI reference names every flag each bin's command lists.
 * - Budgets: each page at most 15 KB, the user docs together at most 150 KB (`docsCheck/budgets.ts`).
 * - TypeScript: every `ts` block compiles against the packages (`docsCheck/typescriptBlocks.ts` says how a block may
 *   continue another, name its file, assume declarations, or be a fragment).
 * - Settings: the settings reference documents exactly the settings the code reads, with their defaults and ranges.
 *
 * Exit code 0 when everything holds, 1 with each problem listed otherwise. Part of `npm run lint`.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { z } from "zod";
import { DEV_ENQUEUE_USAGE, DEV_PROGRAM } from "../../dev/src/cli/main";
import { CONNECTION_SETTINGS, IDENTITY_CONNECTION_SUFFIXES, settingsSchema } from "../../src/app/settings";
import { TELEMETRY_SETTING_NAMES } from "../../src/app/telemetry/telemetrySettings";
import { RUNTIME_PROGRAM } from "../../src/cli/main";
import { USAGE as REPO_ENQUEUE_USAGE } from "../tools/enqueue";
import { checkBudgets, isApiReport } from "./docsCheck/budgets";
import { checkCodeMentions } from "./docsCheck/codeMentions";
import { compileBlocks } from "./docsCheck/compileBlocks";
import { checkCliReference, checkFlags, type DocumentedCommand } from "./docsCheck/flags";
import { checkLinks, type LinkContext } from "./docsCheck/links";
import { checkSettingsReference, type KnownSetting } from "./docsCheck/settingsReference";
import { typeScriptModules, type BlockModule } from "./docsCheck/typescriptBlocks";

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

/** The settings reference and the CLI reference (checked against the code). */
export const SETTINGS_REFERENCE = "docs/reference/settings.md";
export const CLI_REFERENCE = "docs/reference/cli.md";

/** The repository's tracked files matching `patterns` (git ls-files), relative to it. */
function trackedFiles(...patterns: string[]): string[] {
  return execFileSync("git", ["ls-files", ...patterns], { cwd: REPO, encoding: "utf8" })
    .split("\n")
    .filter((file) => file !== "");
}

/** The repository's tracked Markdown files (git ls-files), as absolute paths. */
function markdownFiles(): string[] {
  return trackedFiles("*.md").map((file) => path.join(REPO, file));
}

/**
 * Every setting the code reads: the settings schema's (with its default and, for a number, its range), the
 * coordination connection's names, and the telemetry's.
 */
export function knownSettings(): KnownSetting[] {
  const defaults = settingsSchema.parse({});
  const schema: KnownSetting[] = Object.entries(settingsSchema.shape).map(([name, type]) => {
    const inner = type instanceof z.ZodDefault ? type.unwrap() : type;
    const range =
      inner instanceof z.ZodNumber && inner.minValue !== null && inner.maxValue !== null
        ? { min: inner.minValue, max: inner.maxValue }
        : {};
    return { name, default: String(defaults[name as keyof typeof defaults]), ...range };
  });
  const connection = CONNECTION_SETTINGS.coordination;
  return [
    ...schema,
    { name: connection },
    ...IDENTITY_CONNECTION_SUFFIXES.map((suffix) => ({ name: `${connection}__${suffix}` })),
    ...TELEMETRY_SETTING_NAMES.map((name) => ({ name })),
  ];
}

/** The bins' commands, with their usage, that the CLI reference documents. */
export function referencedCommands(): { name: string; usage: string }[] {
  return [
    ...Object.entries(RUNTIME_PROGRAM.commands).map(([name, command]) => ({
      name: `azure-leader-coordinator ${name}`,
      usage: command.usage,
    })),
    ...Object.entries(DEV_PROGRAM.commands).map(([name, command]) => ({
      name: `azure-leader-coordinator-dev ${name}`,
      usage: name === "enqueue" ? DEV_ENQUEUE_USAGE : command.usage,
    })),
  ];
}

/**
 * Text files of the code that may name a page of the docs: what ships, deploys or runs (not the tests, whose fixtures
 * name pages that do not exist on purpose, and which read the pages they check and fail without them).
 */
function codeFiles(): string[] {
  return trackedFiles(
    ...["ts", "mts", "cts", "js", "mjs", "cjs", "bicep", "bicepparam", "sh", "yaml", "yml", "cs"].map(
      (ext) => `*.${ext}`,
    ),
  ).filter((file) => !file.startsWith("bench-results/") && !file.startsWith("test/"));
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
  for (const file of codeFiles())
    for (const dead of checkCodeMentions(REPO, file, readFileSync(path.join(REPO, file), "utf8")))
      problems.push(`${dead.file}:${dead.line}: ${dead.mention}: ${dead.why}`);
  const relative = markdownFiles().map((file) => path.relative(REPO, file).split(path.sep).join("/"));
  const budgets = checkBudgets(relative.map((file) => ({ file, bytes: statSync(path.join(REPO, file)).size })));
  problems.push(...budgets.problems);
  const modules: BlockModule[] = [];
  let fragments = 0;
  // The API reports show the API as declarations, not code to run.
  for (const file of relative.filter((name) => !isApiReport(name))) {
    const found = typeScriptModules(file, readFileSync(path.join(REPO, file), "utf8"));
    modules.push(...found.modules);
    fragments += found.fragments.length;
    problems.push(...found.problems.map((problem) => `${problem.file}:${problem.line}: ${problem.why}`));
  }
  for (const error of compileBlocks(REPO, modules)) problems.push(`${error.file}:${error.line}: ${error.message}`);
  const reference = (file: string): string =>
    existsSync(path.join(REPO, file)) ? readFileSync(path.join(REPO, file), "utf8") : "";
  problems.push(
    ...checkSettingsReference(SETTINGS_REFERENCE, reference(SETTINGS_REFERENCE), knownSettings()),
    ...checkCliReference(CLI_REFERENCE, reference(CLI_REFERENCE), referencedCommands()),
  );
  const shipped = packages.map((pkg) => [...pkg.files].filter((name) => name.endsWith(".md")).length);
  process.stdout.write(
    `Docs: ${markdownFiles().length} Markdown files (${shipped.join(" + ")} shipped), ${links} links (${external} to other sites, not fetched), flags of ${commands.length} commands; user docs ${budgets.userBytes} bytes in ${budgets.userPages} pages; ${modules.length} TypeScript modules compiled (${fragments} fragments not); ${knownSettings().length} settings.\n`,
  );
  if (problems.length === 0) return;
  process.stderr.write(`${problems.join("\n")}\n${problems.length} problem(s).\n`);
  process.exitCode = 1;
}

if (require.main === module) main();
