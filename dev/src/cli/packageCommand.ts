/**
 * `azure-leader-coordinator-dev package [--out DIR]` (default `.deploy`): the folder `func azure functionapp publish`
 * (or `azd deploy`) takes, after the app's build. The repository's own `npm run package` is this command.
 *
 * Copies what the Functions host runs — host.json, package.json, the lockfile and the build output (the top folder of
 * package.json `main`, e.g. `dist/`) — into DIR, fresh, and installs the production dependencies there exactly as the
 * lockfile says (`npm ci --omit=dev`), so development dependencies (this package, Azurite, TypeScript, a test runner,
 * …) are never deployed. The project's own node_modules stays as it is. Prints the folder's size.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseFlags, pathFlag, UsageError, type CommandIo } from "azure-leader-coordinator/internal";

/** Usage of `package --help`. */
export const PACKAGE_USAGE = `Usage: azure-leader-coordinator-dev package [--out DIR]

Builds the folder to deploy in DIR (default .deploy), from the project in the current directory, after your build:
host.json, package.json, the lockfile (package-lock.json or npm-shrinkwrap.json), the top folder of package.json
"main" (your build output, e.g. dist/) and the production dependencies only (npm ci --omit=dev: no Azurite, no
development tools). Then publish it:
  cd .deploy && func azure functionapp publish <app>

  --out DIR   where to build it (emptied first; never the project folder)
  --help      show this text`;

/** Files and bytes under `dir`. */
export function sizeOf(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    files++;
    bytes += statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return { files, bytes };
}

/** What a deploy folder holds of the project besides its production node_modules. */
export function packageContents(root: string): string[] {
  const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { main?: unknown };
  const main = typeof manifest.main === "string" ? manifest.main : "";
  if (main === "" || !existsSync(path.join(root, main)))
    throw new UsageError(
      `${path.join(root, main || "<package.json main>")} does not exist: build your app first (e.g. npm run build).`,
    );
  const build = path.normalize(main).split(path.sep)[0] ?? main;
  const lockfile = ["npm-shrinkwrap.json", "package-lock.json"].find((name) => existsSync(path.join(root, name)));
  if (lockfile === undefined)
    throw new UsageError(
      `${root} has no package-lock.json: run npm install first, so the deploy gets what you tested.`,
    );
  if (!existsSync(path.join(root, "host.json")))
    throw new UsageError(`${root} has no host.json: the Functions host needs one beside package.json.`);
  return ["host.json", "package.json", lockfile, build];
}

/**
 * Builds the deploy folder of the project at `root` into `out` (emptied first).
 *
 * @throws UsageError when the build output, the lockfile or host.json is missing; Error when `npm ci` fails.
 */
export function buildDeployPackage(root: string, out: string): { files: number; bytes: number } {
  if (path.resolve(out) === path.resolve(root)) throw new UsageError("--out must not be the project folder.");
  const contents = packageContents(root);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  for (const name of contents) cpSync(path.join(root, name), path.join(out, name), { recursive: true });
  withoutWorkspaces(out);
  // The npm running this command (npm run or npx set npm_execpath), else the one on PATH.
  const npm = process.env.npm_execpath;
  const [command, prefix] = npm === undefined || !npm.endsWith(".js") ? ["npm", []] : [process.execPath, [npm]];
  execFileSync(command, [...prefix, "ci", "--omit=dev", "--no-audit", "--no-fund"], { cwd: out, stdio: "inherit" });
  return sizeOf(out);
}

/**
 * A project that is an npm workspace root (this repository: the development package is its workspace) deploys
 * without its workspaces — they are development tools, and their folders are not copied. npm counts a workspace's
 * dependencies as production ones, so the lockfile is cut down to what the project's own production dependencies reach
 * (by Node's lookup through nested node_modules), each at its locked version, and package.json to those dependencies.
 */
function withoutWorkspaces(out: string): void {
  const manifestPath = path.join(out, "package.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as Record<string, unknown>;
  if (manifest.workspaces === undefined) return;
  const lockPath = ["npm-shrinkwrap.json", "package-lock.json"]
    .map((name) => path.join(out, name))
    .find((file) => existsSync(file));
  if (lockPath === undefined) return;
  const lock = JSON.parse(readFileSync(lockPath, "utf8")) as { packages?: Record<string, LockEntry> };
  const packages = lock.packages ?? {};
  const reached = reachable(packages);
  const root = Object.fromEntries(
    Object.entries(packages[""] ?? {}).filter(([field]) => field !== "workspaces" && field !== "devDependencies"),
  );
  const kept = Object.entries(packages).filter(([key]) => key !== "" && reached.has(key));
  writeFileSync(
    lockPath,
    `${JSON.stringify({ ...lock, packages: { "": root, ...Object.fromEntries(kept) } }, null, 2)}\n`,
  );
  const production = Object.fromEntries(
    Object.entries(manifest).filter(([field]) => field !== "workspaces" && field !== "devDependencies"),
  );
  writeFileSync(manifestPath, `${JSON.stringify(production, null, 2)}\n`);
}

/** A package of a lockfile: what it depends on (a link has no version and cannot be deployed). */
interface LockEntry {
  link?: boolean;
  resolved?: string;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/**
 * The lockfile's packages that the root's production dependencies reach, each name looked up as Node does: in the
 * dependent's own node_modules, then in each folder above it.
 *
 * @throws UsageError when a production dependency is a link (a workspace), which a deploy folder cannot hold.
 */
function reachable(packages: Record<string, LockEntry>): Set<string> {
  const seen = new Set<string>();
  const visit = (from: string): void => {
    const entry = packages[from];
    if (entry === undefined) return;
    const names = Object.keys({ ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies });
    for (const name of names) {
      const found = lookup(packages, from, name);
      if (found === undefined || seen.has(found)) continue;
      const linked = packages[found];
      if (linked?.link === true)
        throw new UsageError(
          `${name} is a production dependency linked to ${linked.resolved ?? "a folder"}: deploy folders hold installed packages only.`,
        );
      seen.add(found);
      visit(found);
    }
  };
  visit("");
  return seen;
}

/** Where `name` resolves from the package at `from` ("" for the root), or undefined when the lockfile lacks it. */
function lookup(packages: Record<string, LockEntry>, from: string, name: string): string | undefined {
  let base = from;
  for (;;) {
    const candidate = `${base === "" ? "" : `${base}/`}node_modules/${name}`;
    if (packages[candidate] !== undefined) return candidate;
    if (base === "") return undefined;
    const at = base.lastIndexOf("/node_modules/");
    base = at === -1 ? "" : base.slice(0, at);
  }
}

/** Runs `package` with its flags; the exit code. */
export function runPackage(argv: readonly string[], io: CommandIo): Promise<number | "help"> {
  const values = parseFlags(argv, { out: { type: "string" }, help: { type: "boolean" } });
  if (values.help === true) return Promise.resolve("help");
  const out = path.resolve(pathFlag(values.out, "--out") ?? ".deploy");
  const { files, bytes } = buildDeployPackage(process.cwd(), out);
  const shown = path.relative(process.cwd(), out) || out;
  io.stdout.write(
    `Deploy folder ${shown}: ${files.toLocaleString("en-US")} files, ${(bytes / 1024 / 1024).toFixed(1)} MB. Publish it: cd ${shown} && func azure functionapp publish <app>\n`,
  );
  return Promise.resolve(0);
}
