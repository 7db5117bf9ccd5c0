import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { REPO_ROOT } from "./paths";

/**
 * Helpers of the deploy-package tests: a fresh clone of the repository, the documented bash blocks run in it, the
 * package's size and what its `main` registers; and `.funcignore` read as Azure Functions Core Tools reads it and with
 * git's semantics (azd and the usual ignore libraries), for a publish from the project folder itself.
 */

const exec = promisify(execFile);
const requireHere = createRequire(__filename);

/** The two readings of `.funcignore`. */
export type Reading = "core-tools" | "git";

/** Result of a child process: exit code and output, never thrown. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command and returns its exit code and output instead of throwing on failure. */
export async function run(
  file: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<RunResult> {
  try {
    const { stdout, stderr } = await exec(file, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      timeout: options.timeoutMs ?? 120_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string; message?: string };
    return {
      code: typeof failed.code === "number" ? failed.code : -1,
      stdout: failed.stdout ?? "",
      stderr: failed.stderr ?? failed.message ?? "",
    };
  }
}

/** Runs a command; throws with its output when it fails. */
async function runOrThrow(file: string, args: readonly string[], cwd: string): Promise<string> {
  const result = await run(file, args, { cwd });
  if (result.code !== 0)
    throw new Error(
      `${file} ${args.join(" ")} failed (exit ${result.code}) in ${cwd}:\n${result.stderr}${result.stdout}`,
    );
  return result.stdout;
}

/**
 * Core Tools' reading of `.funcignore`: a port of `Azure.Functions.Cli.Common.GitIgnoreParser` (itself a port of
 * codemix/gitignore-parser). A leading `/` is dropped, every pattern becomes a regular expression anchored at the
 * START of the path relative to the app root (`**` → `.+`, `*` → one path segment's characters) and matches any path
 * it is a prefix of. So `src/` means the root's `src` only, and `*.ts` only files at the root. Returns `Accepts`.
 */
export function coreToolsAccepts(funcignore: string): (relativePath: string) => boolean {
  const positive: string[] = [];
  const negative: string[] = [];
  for (const raw of funcignore.split("\n")) {
    let line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const isNegative = line.startsWith("!");
    if (isNegative) line = line.slice(1);
    if (line.startsWith("/")) line = line.slice(1);
    (isNegative ? negative : positive).push(line);
  }
  const prepare = (pattern: string): string =>
    pattern
      .replace(/[-[\]/{}()+?.\\^$|]/g, "\\$&")
      .replaceAll("**", "(.+)")
      .replaceAll("*", "([^\\/]+)");
  const compile = (patterns: string[]): RegExp =>
    patterns.length > 0 ? new RegExp(`^((${patterns.sort().map(prepare).join(")|(")}))`) : /$^/;
  const [denied, allowed] = [compile(positive), compile(negative)];
  return (relativePath) => allowed.test(relativePath) || !denied.test(relativePath);
}

/**
 * Directories and file names Core Tools' publish never packs, whatever `.funcignore` says
 * (FileSystemHelpers.GetLocalFiles).
 */
const CORE_TOOLS_SKIPPED_DIRECTORIES = new Set([".git", ".vscode"]);
const CORE_TOOLS_SKIPPED_FILES = new Set([".funcignore", ".gitignore", "local.settings.json", "project.lock.json"]);

/** Every file under `root` as Core Tools' publish lists it: relative, `/`-separated, accepted by `.funcignore`. */
export function coreToolsFiles(root: string, funcignore: string): string[] {
  const accepts = coreToolsAccepts(funcignore);
  const files: string[] = [];
  const walk = (relativeDir: string): void => {
    for (const entry of readdirSync(path.join(root, relativeDir), { withFileTypes: true })) {
      const relative = relativeDir === "" ? entry.name : `${relativeDir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!CORE_TOOLS_SKIPPED_DIRECTORIES.has(entry.name)) walk(relative);
      } else if (!CORE_TOOLS_SKIPPED_FILES.has(entry.name) && accepts(relative)) {
        files.push(relative);
      }
    }
  };
  walk("");
  return files.sort();
}

/**
 * Git's reading of `.funcignore` (gitignore semantics: a pattern without a leading or inner `/` matches at any depth,
 * so `src/` also drops `dist/src/`): git itself lists the files under `root` that the patterns do not exclude. The git
 * directory lives outside `root`, which stays untouched; no other ignore file (.gitignore, global excludes) applies.
 */
export async function gitFiles(root: string, funcignorePath: string): Promise<string[]> {
  const gitDir = mkdtempSync(path.join(tmpdir(), "funcignore-git-"));
  await runOrThrow("git", ["init", "--quiet", gitDir], root);
  const listed = await runOrThrow(
    "git",
    [
      `--git-dir=${path.join(gitDir, ".git")}`,
      `--work-tree=${root}`,
      "ls-files",
      "-z",
      "--others",
      `--exclude-from=${funcignorePath}`,
    ],
    root,
  );
  return listed
    .split("\0")
    .filter((name) => name !== "")
    .sort();
}

/**
 * A fresh clone of the project: every file of the repository (tracked, or new and not git-ignored; as they are in the
 * working tree), no node_modules, no build output.
 */
export async function stageClone(): Promise<string> {
  const stage = mkdtempSync(path.join(tmpdir(), "deploy-clone-"));
  const listed = await runOrThrow("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], REPO_ROOT);
  for (const name of listed.split("\0")) {
    if (name === "" || !existsSync(path.join(REPO_ROOT, name))) continue;
    copyInto(REPO_ROOT, stage, name);
  }
  return stage;
}

function copyInto(from: string, to: string, relative: string): void {
  mkdirSync(path.dirname(path.join(to, relative)), { recursive: true });
  copyFileSync(path.join(from, relative), path.join(to, relative));
}

/** Every fenced bash block of a Markdown file of the repository, unindented, whose text `matches`. */
export function bashBlocks(file: string, matches: (block: string) => boolean): string[] {
  const text = readFileSync(path.join(REPO_ROOT, file), "utf8");
  return [...text.matchAll(/^( *)```bash\n([\s\S]*?)^\1```/gm)]
    .map((match) => (match[2] ?? "").replace(new RegExp(`^${match[1] ?? ""}`, "gm"), ""))
    .filter(matches);
}

/** Runs bash code in `cwd` (with `-e`: the first failing command fails it), with the given PATH first. */
export function runBash(code: string, cwd: string, options: { path?: string; timeoutMs?: number } = {}) {
  const PATH = [options.path, process.env.PATH ?? ""].filter((part) => part !== undefined).join(path.delimiter);
  return run("bash", ["-e", "-c", code], {
    cwd,
    env: { ...process.env, PATH },
    timeoutMs: options.timeoutMs ?? 600_000,
  });
}

/** The entry the Functions worker loads: package.json `main`, resolved in the package. */
export function packageMain(packageDir: string): string {
  const manifest = JSON.parse(readFileSync(path.join(packageDir, "package.json"), "utf8")) as { main?: string };
  if (manifest.main === undefined) throw new Error(`${packageDir}/package.json has no "main".`);
  return path.join(packageDir, manifest.main);
}

const CAPTURE_SCRIPT = path.join(REPO_ROOT, "test", "support", "captureRegistrations.ts");
const TSX_LOADER = pathToFileURL(requireHere.resolve("tsx")).href;

/**
 * Loads `entry` in a fresh Node process (working directory `cwd`) with the worker's core API stood in, and returns
 * what it registered (the JSON line of captureRegistrations.ts) — or the failure. No app settings are set: loading
 * must not need them.
 */
export function captureRegistrations(entry: string, cwd: string): Promise<RunResult> {
  const env = { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? tmpdir() };
  return run(process.execPath, ["--import", TSX_LOADER, CAPTURE_SCRIPT, entry], { cwd, env, timeoutMs: 60_000 });
}
