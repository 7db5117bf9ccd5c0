import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import type * as Instances from "../../../dev/src/local/instances";
import { REPO_APP } from "../../support/repoApp";

/**
 * This repository's app as Azure runs it: compiled JavaScript under plain Node. `npm run build` compiles the package
 * (tshy: dist/commonjs, dist/esm) and the app (dist/functions/index.js, package.json `main`, which requires the
 * package by name: its CommonJS build). An instance process started from dist/commonjs/local/instances.js is
 * `node dist/commonjs/local/instance.js` (dev/src/local/entryPoints), as `npx azure-leader-coordinator local` runs it
 * from the installed package: no tsx loader anywhere in the process. From sources (`REPO_APP`, tsx) the same code runs
 * with tsx's loader and esbuild's output instead of tsc's.
 */

const REPO = resolve(__dirname, "..", "..", "..");
const DIST_INSTANCES = join(REPO, "dist", "commonjs", "local", "instances.js");
const DIST_APP = join(REPO, "dist", "functions", "index.js");
/** What the build reads: when any is newer than its outputs, the build is stale. */
const BUILD_INPUTS = ["src", "functions", "tsconfig.json", "tsconfig.build.json", "tsconfig.functions.json"];

/** `LOCAL_APP_ENTRY` and `LOCAL_HOST_JSON` for the compiled app. */
export const COMPILED_APP = { LOCAL_APP_ENTRY: DIST_APP, LOCAL_HOST_JSON: REPO_APP.LOCAL_HOST_JSON } as const;

/** The newest file's mtime under `path` (directories' own mtimes move when tshy writes src/package.json). */
function newestMtimeMs(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  return readdirSync(path, { recursive: true, encoding: "utf8" }).reduce((newest, entry) => {
    const file = statSync(join(path, entry));
    return file.isDirectory() ? newest : Math.max(newest, file.mtimeMs);
  }, 0);
}

/** Why the build must run again, or undefined when dist is up to date with src/, functions/ and the tsconfigs. */
function staleBecause(): string | undefined {
  if (!existsSync(DIST_INSTANCES) || !existsSync(DIST_APP)) return "dist/ has no build";
  // The build's last output (tshy leaves unchanged files as they were; tsc then writes the app every time).
  const built = statSync(DIST_APP).mtimeMs;
  const input = BUILD_INPUTS.map((name) => join(REPO, name)).find(
    (path) => existsSync(path) && newestMtimeMs(path) > built,
  );
  return input === undefined ? undefined : `${input} changed since the last build`;
}

/** Runs `npm run build` when dist/ is missing or older than its sources; says so on `log`. */
export function ensureBuild(log: (line: string) => void): void {
  const reason = staleBecause();
  if (reason === undefined) return;
  log(`Building the package and the app (npm run build): ${reason}.`);
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  const built = spawnSync(npm, ["run", "build"], { cwd: REPO, stdio: ["ignore", "inherit", "inherit"] });
  if (built.status !== 0) throw new Error(`npm run build failed (exit ${built.status ?? built.signal ?? "?"}).`);
}

/** The compiled local host's InstanceProcess: its instances run dist/commonjs/local/instance.js under plain Node. */
export function compiledInstanceProcess(): typeof Instances.InstanceProcess {
  const compiled = createRequire(__filename)(DIST_INSTANCES) as typeof Instances;
  return compiled.InstanceProcess;
}
