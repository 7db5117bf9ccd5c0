import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { BicepCli } from "./bicepCli";
import { type BicepDiagnostic, parseDiagnostics } from "./diagnostics";

/**
 * Runs the real Bicep compiler over a project's templates: `bicep build` of every `.bicep`, `bicep build-params` of
 * every `.bicepparam`, `bicep lint`, and `bicep snapshot` (the compiler's own evaluation of a template with given
 * parameters, scope and region: every resource it would deploy, names, properties and role assignments resolved as
 * far as they are known before deployment). Used by `npm run infra:check`, the infra tests, and the test that compiles
 * a user's project against the shipped module.
 */

/** One evaluation of a template with parameters. */
export interface SnapshotRequest {
  /** File name of the snapshot (`<name>.snapshot.json` in the output folder). */
  readonly name: string;
  /** The template, relative to the project folder. */
  readonly template: string;
  /** Body of a `.bicepparam` file (its `param` lines); the `using` line is written for it. */
  readonly params: string;
  readonly subscriptionId: string;
  /** Absent for a subscription-scope template. */
  readonly resourceGroup?: string;
  readonly location: string;
}

export interface CompileRequest {
  /** The project folder; the compiler runs there, and paths are relative to it. */
  readonly cwd: string;
  /** Folders (relative to cwd) whose `.bicep` and `.bicepparam` files are built and linted. */
  readonly roots: readonly string[];
  readonly snapshots: readonly SnapshotRequest[];
  /** Where the ARM JSON goes: `<outDir>/<root>/<same path>.json`, `<name>.snapshot.json`. */
  readonly outDir: string;
}

export interface CompileResult {
  /** Every diagnostic of every step, each once. */
  readonly diagnostics: BicepDiagnostic[];
  /** Steps whose compiler process exited non-zero (an error it reported), with what it printed. */
  readonly failedSteps: { readonly step: string; readonly output: string }[];
}

/** Every file under `dir` whose name ends with `extension`, relative to `base`, sorted. */
export function listFiles(base: string, dir: string, extension: string): string[] {
  return readdirSync(path.join(base, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(extension))
    .map((entry) => path.relative(base, path.join(entry.parentPath, entry.name)))
    .sort();
}

interface Step {
  readonly name: string;
  readonly args: readonly string[];
}

function runStep(cli: BicepCli, cwd: string, step: Step): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(cli.path, [...step.args], { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, output: `${stdout}\n${stderr}` });
    });
  });
}

/** Runs `tasks` at most `limit` at a time (the machine has 2 cores; each compiler process uses one). */
async function inBatches<T>(tasks: readonly (() => Promise<T>)[], limit: number): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const index = next++;
      const task = tasks[index];
      if (task !== undefined) results[index] = await task();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

/** Compiles, lints and evaluates the project's templates into `outDir`. */
export async function compileTemplates(cli: BicepCli, request: CompileRequest): Promise<CompileResult> {
  const { cwd, outDir } = request;
  mkdirSync(outDir, { recursive: true });
  const steps: Step[] = [];
  for (const root of request.roots) {
    const pattern = `${root}/**/*.bicep`;
    steps.push({
      name: `build ${pattern}`,
      args: ["build", "--pattern", pattern, "--outdir", path.join(outDir, root)],
    });
    steps.push({ name: `lint ${pattern}`, args: ["lint", "--pattern", pattern] });
    for (const file of listFiles(cwd, root, ".bicepparam")) {
      const outfile = path.join(outDir, file.replace(/\.bicepparam$/, ".parameters.json"));
      mkdirSync(path.dirname(outfile), { recursive: true });
      steps.push({ name: `build-params ${file}`, args: ["build-params", file, "--outfile", outfile] });
    }
  }
  const snapshotDir = path.join(outDir, "snapshots");
  mkdirSync(snapshotDir, { recursive: true });
  for (const snapshot of request.snapshots) {
    // `bicep snapshot` writes <params>.snapshot.json beside the parameters file, so that file lives in the output.
    const paramsFile = path.join(snapshotDir, `${snapshot.name}.bicepparam`);
    const using = path.relative(snapshotDir, path.join(cwd, snapshot.template));
    writeFileSync(paramsFile, `using '${using}'\n\n${snapshot.params}\n`);
    const scope = [
      ["--subscription-id", snapshot.subscriptionId],
      ["--location", snapshot.location],
      ...(snapshot.resourceGroup === undefined ? [] : [["--resource-group", snapshot.resourceGroup]]),
    ].flat();
    steps.push({ name: `snapshot ${snapshot.name}`, args: ["snapshot", paramsFile, "--mode", "overwrite", ...scope] });
  }
  const results = await inBatches(
    steps.map((step) => async () => ({ step, ...(await runStep(cli, cwd, step)) })),
    2,
  );
  const output = results.map((result) => result.output).join("\n");
  return {
    diagnostics: parseDiagnostics(output, cwd),
    failedSteps: results
      .filter((result) => result.code !== 0)
      .map((result) => ({ step: result.step.name, output: result.output.trim() })),
  };
}

/** A compiled template or snapshot, parsed. */
export function readJson(file: string): unknown {
  return JSON.parse(readFileSync(file, "utf8")) as unknown;
}
