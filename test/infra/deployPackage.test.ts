import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CapturedRegistrations } from "../support/captureRegistrations";
import { REPO_ROOT } from "./paths";
import {
  type RunResult,
  bashBlocks,
  captureRegistrations,
  coreToolsAccepts,
  coreToolsFiles,
  gitFiles,
  packageMain,
  runBash,
  stageClone,
} from "./deployPackage";
import { sizeOf } from "../../dev/src/cli/packageCommand";

/**
 * The deploy package is built exactly as docs/DEPLOY.md says — its build block (`npm ci`, `npm run build`,
 * `npm run package`) run as written in a fresh clone, with the real npm — and it holds production dependencies only,
 * stays within its size, and loads: its `main` registers every function with the same bindings as the source.
 */

const DEPLOY_MD = "docs/DEPLOY.md";
/** Where `npm run package` puts the package (DEPLOY.md publishes that folder; azure.yaml packages it). */
const PACKAGE_DIR = ".deploy";
/**
 * Most MB (MiB) and files the package may hold (it measured 95 MB and 16,124 files with the OpenTelemetry exporter;
 * the full development install is 420 MB and 33,000 files): a new heavy dependency must be a deliberate choice.
 */
const MAX_PACKAGE_MB = 130;
const MAX_PACKAGE_FILES = 20_000;

let clone = "";
let built: RunResult = { code: -1, stdout: "", stderr: "not run" };
let loaded: RunResult = { code: -1, stdout: "", stderr: "not loaded" };
let source: CapturedRegistrations;
const packageDir = (): string => path.join(clone, PACKAGE_DIR);

beforeAll(async () => {
  clone = await stageClone();
  const [block] = bashBlocks(DEPLOY_MD, (text) => text.includes("npm run package"));
  expect(block, `${DEPLOY_MD} has a bash block that runs npm run package`).toBeDefined();
  // The docs' commands as written; the Node on this test's PATH (Node 22) runs npm.
  built = await runBash(block ?? "false", clone, { path: path.dirname(process.execPath) });
  const capturingSource = captureRegistrations(path.join(REPO_ROOT, "functions", "index.ts"), REPO_ROOT);
  if (built.code === 0) loaded = await captureRegistrations(packageMain(packageDir()), packageDir());
  const fromSource = await capturingSource;
  expect(withoutStack(fromSource.stderr)).toBe("");
  source = JSON.parse(fromSource.stdout) as CapturedRegistrations;
  if (built.code === 0) {
    const size = sizeOf(packageDir());
    const modules = sizeOf(path.join(packageDir(), "node_modules"));
    const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);
    console.info(
      `deploy package (${DEPLOY_MD}, ${PACKAGE_DIR}/): ${size.files} files, ${mb(size.bytes)} MB unpacked — node_modules ${modules.files} files (${mb(modules.bytes)} MB)`,
    );
  }
}, 900_000);

afterAll(() => {
  // Some 50,000 files (the clone's full install and the package's): slow to delete on a busy machine.
  if (clone !== "") rmSync(clone, { recursive: true, force: true });
}, 300_000);

/**
 * A child's error output without its stack frames: as an assertion message, frames pointing into the temporary
 * package would be mistaken by vitest for frames of the test (it then tries to read their source maps).
 */
function withoutStack(stderr: string | undefined): string {
  return (stderr ?? "")
    .split("\n")
    .filter((line) => !/^\s+at /.test(line))
    .join("\n");
}

/** The trigger binding of a captured function. */
function trigger(captured: CapturedRegistrations, name: string): Record<string, unknown> | undefined {
  const fn = captured.functions.find((candidate) => candidate.name === name);
  return Object.values(fn?.bindings ?? {}).find(
    (binding) => typeof binding.type === "string" && binding.type.endsWith("Trigger"),
  );
}

describe("the deploy package, built as docs/DEPLOY.md says", () => {
  it("the documented build runs on a fresh clone and leaves the package in .deploy/", () => {
    expect(built.code, withoutStack(built.stderr)).toBe(0);
    for (const file of ["host.json", "package.json", "package-lock.json", "dist/functions/index.js"])
      expect(existsSync(path.join(packageDir(), file)), file).toBe(true);
  });

  it("production dependencies only, no sources, tests or tooling; within its size", () => {
    const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    const modules = path.join(packageDir(), "node_modules");
    expect(Object.keys(manifest.devDependencies).filter((name) => existsSync(path.join(modules, name)))).toEqual([]);
    expect(Object.keys(manifest.dependencies).filter((name) => !existsSync(path.join(modules, name)))).toEqual([]);
    for (const folder of ["src", "functions", "test", "scripts", "infra", "docs", ".ci"])
      expect(existsSync(path.join(packageDir(), folder)), folder).toBe(false);
    const size = sizeOf(packageDir());
    expect(size.bytes / 1024 / 1024).toBeLessThan(MAX_PACKAGE_MB);
    expect(size.files).toBeLessThan(MAX_PACKAGE_FILES);
  });

  it("its main registers every function with the bindings of the source, and the app-terminate hook", () => {
    expect(loaded.code, withoutStack(loaded.stderr)).toBe(0);
    const captured = JSON.parse(loaded.stdout) as CapturedRegistrations;
    const byName = (value: CapturedRegistrations) => [...value.functions].sort((a, b) => a.name.localeCompare(b.name));
    expect(byName(captured)).toEqual(byName(source));
    expect(captured.hooks).toEqual(source.hooks);
    expect(captured.hooks).toContain("appTerminate");
    // Names and the schedule as the registration resolves them from the settings (their defaults here).
    expect(trigger(captured, "coordinator")).toMatchObject({ type: "timerTrigger", schedule: "0 * * * * *" });
    expect(trigger(captured, "worker")).toMatchObject({
      type: "queueTrigger",
      queueName: "work-items",
      connection: "COORDINATION_STORAGE",
    });
    expect(trigger(captured, "submitJob")).toMatchObject({ route: "jobs", methods: ["POST"], authLevel: "function" });
    expect(trigger(captured, "getJob")).toMatchObject({ route: "jobs/{id}", methods: ["GET"], authLevel: "function" });
    expect(trigger(captured, "getLeader")).toMatchObject({ route: "leader", methods: ["GET"], authLevel: "function" });
    expect(trigger(captured, "stepDown")).toMatchObject({
      route: "leader/step-down",
      methods: ["POST"],
      authLevel: "admin",
    });
    expect(trigger(captured, "cancelJob")).toMatchObject({
      route: "jobs/{id}",
      methods: ["DELETE"],
      authLevel: "admin",
    });
  });
});

describe(".funcignore, for a publish from the project folder itself", () => {
  it("Core Tools' reading anchors patterns at the app root: src/ drops src/ but not dist/src/; *.ts only root files; ! re-includes", () => {
    const accepts = coreToolsAccepts("src/\n*.ts\n/docs/\n# comment\nfunctions/**/*.ts\n!docs/keep.md\n");
    expect(accepts("src/app/context.ts")).toBe(false);
    expect(accepts("dist/src/app/context.js")).toBe(true);
    expect(accepts("index.ts")).toBe(false);
    expect(accepts("dist/functions/index.d.ts")).toBe(true);
    expect(accepts("functions/deep/x.ts")).toBe(false);
    expect(accepts("docs/DEPLOY.md")).toBe(false);
    expect(accepts("docs/keep.md")).toBe(true);
    expect(accepts("host.json")).toBe(true);
  });

  it("Core Tools and git-semantics tools (azd) read it alike: the build output with the package's CommonJS build, no sources, not the development package (dev/) or .deploy", async () => {
    const funcignore = path.join(clone, ".funcignore");
    const outside = (file: string): boolean => !file.startsWith("node_modules/");
    const coreTools = coreToolsFiles(clone, readFileSync(funcignore, "utf8")).filter(outside);
    const git = (await gitFiles(clone, funcignore)).filter(outside);
    expect(git).toEqual(coreTools);
    expect(coreTools).toEqual(
      expect.arrayContaining(["host.json", "package.json", "dist/functions/index.js", "dist/commonjs/app/context.js"]),
    );
    expect(
      coreTools.filter(
        (file) =>
          /^(src|dev|functions|test|scripts|infra|docs|\.ci|\.deploy)\//.test(file) ||
          /(?<!\.d)\.ts$/.test(file) ||
          file.startsWith("local.settings"),
      ),
    ).toEqual([]);
  });
});
