/**
 * `npm run bench:deploy` (issue 44): how large a user's production install is, today's package against the split one,
 * measured side by side in one run. Three projects outside the repository, each with @azure/functions:
 *
 * - before, with Azurite: the package as it was (built from `--baseline-ref`, or `--baseline-tarball`) and `azurite` as
 *   a dev dependency, installed with `npm install --omit=dev` — what a user deployed (Azurite was an optional peer
 *   dependency, so npm kept it);
 * - before, without Azurite: the same package alone;
 * - after: the runtime package, with azure-leader-coordinator-dev (which brings Azurite) as a dev dependency, and the
 *   deploy folder its `package` command builds.
 *
 * Prints MB, top-level packages and files of each node_modules, and writes bench-results/deploy.json.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import path from "node:path";
import { parseFlags, pathFlag, UsageError } from "../../../src/cli/flags";
import { describeSize, installSize, type InstallSize } from "./deploy/measure";

const REPO = path.resolve(__dirname, "..", "..", "..");

const USAGE = `Usage: npm run bench:deploy -- [--baseline-ref REF | --baseline-tarball FILE] [--out FILE]

Measures a user's production install before and after the runtime was split from the development tools (issue 44).

  --baseline-ref REF        the commit whose package is "before", packed in a temporary worktree (default abfc6c7,
                            main before the split)
  --baseline-tarball FILE   instead: a tarball of the package before
  --out FILE                the JSON report (default bench-results/deploy.json)`;

/** Runs a command in `cwd`, its output shown only when it fails. */
function sh(cwd: string, file: string, args: string[]): string {
  return execFileSync(file, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], maxBuffer: 64 << 20 });
}

/** The version this repository's lockfile installed of `name` (so npm finds it in its cache). */
function pinned(name: string): string {
  return (
    JSON.parse(sh(REPO, "node", ["-p", `JSON.stringify(require("${name}/package.json"))`])) as { version: string }
  ).version;
}

/** Packs the package at `dir` (a workspace of it, without scripts: the root's pack built it) into `into`. */
function pack(dir: string, into: string, workspace?: string): string {
  const args = workspace === undefined ? [] : ["--workspace", workspace, "--ignore-scripts"];
  const [info] = JSON.parse(sh(dir, "npm", ["pack", "--json", "--pack-destination", into, ...args])) as {
    filename: string;
  }[];
  if (info === undefined) throw new Error(`npm pack printed nothing in ${dir}`);
  return path.join(into, info.filename);
}

/** The package as it was at `ref`: a detached worktree, installed from its lockfile and packed. */
function packBaseline(ref: string, into: string): string {
  const worktree = path.join(into, "baseline");
  sh(REPO, "git", ["worktree", "add", "--detach", worktree, ref]);
  try {
    sh(worktree, "npm", ["ci", "--no-audit", "--no-fund"]);
    return pack(worktree, into);
  } finally {
    sh(REPO, "git", ["worktree", "remove", "--force", worktree]);
  }
}

/**
 * A user's project in `root/name` with these dependencies, installed as `npm install` does (`omitDev`: for
 * production).
 */
function project(
  root: string,
  name: string,
  dependencies: Record<string, string>,
  devDependencies: Record<string, string>,
  omitDev: boolean,
): string {
  const dir = path.join(root, name);
  mkdirSync(path.join(dir, "dist"), { recursive: true });
  writeFileSync(
    path.join(dir, "package.json"),
    JSON.stringify({ name, version: "1.0.0", private: true, main: "dist/index.js", dependencies, devDependencies }),
  );
  writeFileSync(path.join(dir, "dist", "index.js"), "");
  writeFileSync(path.join(dir, "host.json"), JSON.stringify({ version: "2.0" }));
  const omit = omitDev ? ["--omit=dev"] : [];
  sh(dir, "npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", ...omit]);
  return dir;
}

function main(): void {
  const values = parseFlags(process.argv.slice(2), {
    "baseline-ref": { type: "string" },
    "baseline-tarball": { type: "string" },
    out: { type: "string" },
    help: { type: "boolean" },
  });
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (values["baseline-ref"] !== undefined && values["baseline-tarball"] !== undefined)
    throw new UsageError("Give --baseline-ref or --baseline-tarball, not both.");
  const out = path.resolve(pathFlag(values.out, "--out") ?? path.join(REPO, "bench-results", "deploy.json"));
  const work = mkdtempSync(path.join(tmpdir(), "bench-deploy-"));
  const startedAt = new Date().toISOString();
  try {
    const baseline =
      pathFlag(values["baseline-tarball"], "--baseline-tarball") ??
      packBaseline(values["baseline-ref"] ?? "abfc6c7", work);
    const runtime = pack(REPO, work);
    const dev = pack(REPO, work, "dev");
    const functions = pinned("@azure/functions");
    const azurite = pinned("azurite");
    const base = { "@azure/functions": functions };
    const before = installSize(
      project(work, "before-azurite", { ...base, "azure-leader-coordinator": baseline }, { azurite }, true),
    );
    const beforeAlone = installSize(
      project(work, "before-alone", { ...base, "azure-leader-coordinator": baseline }, {}, true),
    );
    const after = project(
      work,
      "after",
      { ...base, "azure-leader-coordinator": runtime },
      { "azure-leader-coordinator-dev": dev },
      false,
    );
    const development = installSize(after);
    // Under this process's Node (the bin's `env node` may find an older one first on PATH).
    const bin = path.join(after, "node_modules", ".bin", "azure-leader-coordinator-dev");
    sh(after, process.execPath, [bin, "package", "--out", "deploy"]);
    const deployed = installSize(path.join(after, "deploy"));
    const sizes: Record<string, InstallSize> = {
      "before, azurite as a dev dependency (npm install --omit=dev)": before,
      "before, without azurite (npm install --omit=dev)": beforeAlone,
      "after, the development install (npm install)": development,
      "after, the deploy folder (azure-leader-coordinator-dev package)": deployed,
    };
    const ratio = deployed.bytes / before.bytes;
    for (const [label, size] of Object.entries(sizes)) process.stdout.write(`${label}: ${describeSize(size)}\n`);
    process.stdout.write(`Deploy folder after / production install before: ${ratio.toFixed(2)} of the bytes\n`);
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(
      out,
      `${JSON.stringify(
        {
          benchmark: "deploy",
          startedAt,
          machine: { cpus: availableParallelism(), loadavg: loadavg() },
          baseline: values["baseline-tarball"] ?? values["baseline-ref"] ?? "abfc6c7",
          pinned: { "@azure/functions": functions, azurite },
          sizes,
          ratio,
        },
        null,
        2,
      )}\n`,
    );
    process.stdout.write(`Report: ${path.relative(process.cwd(), out)}\n`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

try {
  main();
} catch (error) {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  if (error instanceof UsageError) process.stderr.write(`\n${USAGE}\n`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
}
