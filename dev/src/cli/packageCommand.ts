/**
 * The deploy package: `npm run package -- [--out DIR]` (default `.deploy`), after `npm run build`.
 *
 * Copies what the Functions host runs — host.json, package.json, package-lock.json and the build output (dist/) —
 * into DIR, fresh, and installs the production dependencies there exactly as the lockfile says (`npm ci --omit=dev`),
 * so development dependencies (TypeScript, Azurite, Vitest, Playwright, …) are never deployed. The
 * project's own node_modules stays as it is. Publish DIR: `cd .deploy && func azure functionapp publish <app>
 * --typescript`, or `azd deploy` (azure.yaml packages `.deploy`). Prints the package's size.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { parseFlags, pathFlag, UsageError } from "../../src/cli/flags";

const USAGE = `Usage: npm run package -- [--out DIR]
Builds the deploy package in DIR (default .deploy): host.json, package.json, package-lock.json, dist/ (run
npm run build first) and the production dependencies only (npm ci --omit=dev). Then publish DIR:
  cd .deploy && func azure functionapp publish <app> --typescript`;

/** The files and folders of the project that the package holds, besides its production node_modules. */
export const PACKAGE_CONTENTS = ["host.json", "package.json", "package-lock.json", "dist"] as const;

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

/**
 * Builds the package of the project at `root` into `out` (emptied first).
 *
 * @throws UsageError when the build output is missing; Error when `npm ci` fails.
 */
export function buildDeployPackage(root: string, out: string): { files: number; bytes: number } {
  const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { main?: string };
  const main = manifest.main ?? "";
  if (main === "" || !existsSync(path.join(root, main)))
    throw new UsageError(`${path.join(root, main || "<package.json main>")} does not exist: run npm run build first.`);
  if (path.resolve(out) === path.resolve(root)) throw new UsageError("--out must not be the project folder.");
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  for (const name of PACKAGE_CONTENTS) cpSync(path.join(root, name), path.join(out, name), { recursive: true });
  // The npm running this script (npm run sets npm_execpath), else the one on PATH.
  const npm = process.env.npm_execpath;
  const [command, prefix] = npm === undefined ? ["npm", []] : [process.execPath, [npm]];
  execFileSync(command, [...prefix, "ci", "--omit=dev", "--no-audit", "--no-fund"], { cwd: out, stdio: "inherit" });
  return sizeOf(out);
}

function main(): void {
  let out: string;
  try {
    const values = parseFlags(process.argv.slice(2), { out: { type: "string" }, help: { type: "boolean" } });
    if (values.help === true) {
      process.stdout.write(`${USAGE}\n`);
      return;
    }
    out = path.resolve(pathFlag(values.out, "--out") ?? ".deploy");
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`${error.message}\n${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  try {
    const { files, bytes } = buildDeployPackage(process.cwd(), out);
    process.stdout.write(
      `Deploy package in ${path.relative(process.cwd(), out) || out}: ${files.toLocaleString("en-US")} files, ${(bytes / 1024 / 1024).toFixed(1)} MB. Publish it: cd ${path.relative(process.cwd(), out) || out} && func azure functionapp publish <app> --typescript\n`,
    );
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exitCode = 2;
  }
}

if (require.main === module) main();
