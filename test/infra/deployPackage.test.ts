import { existsSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CapturedRegistrations } from "../support/captureRegistrations";
import { REPO_ROOT } from "./bicep";
import {
  type Reading,
  type RunResult,
  assemblePackage,
  captureRegistrations,
  coreToolsAccepts,
  coreToolsFiles,
  gitFiles,
  installProductionDependencies,
  linkDependencies,
  packageMain,
  sameManifests,
  sizeOf,
  stageProject,
} from "./deployPackage";

/**
 * The deploy package loads. `.funcignore` is read by Core Tools with patterns anchored at the app root, but with git's
 * semantics by azd and the usual ignore libraries, where `src/` also matches `dist/src/`. Both readings must give a
 * package that, with production dependencies only, loads `main` and registers every function with its bindings.
 */

const READINGS: readonly Reading[] = ["core-tools", "git"];
const FUNCIGNORE = path.join(REPO_ROOT, ".funcignore");

interface BuiltPackage {
  dir: string;
  files: string[];
  install: RunResult;
  loaded: RunResult;
}

let stage = "";
const packages = new Map<Reading, BuiltPackage>();
let source: CapturedRegistrations;

beforeAll(async () => {
  stage = await stageProject();
  const listings: Record<Reading, string[]> = {
    "core-tools": coreToolsFiles(stage, readFileSync(FUNCIGNORE, "utf8")),
    git: await gitFiles(stage, FUNCIGNORE),
  };
  // The source tree's registrations are the reference (loaded with tsx from functions/index.ts).
  const capturingSource = captureRegistrations(path.join(REPO_ROOT, "functions", "index.ts"), REPO_ROOT);
  let installed: { dir: string; install: RunResult } | undefined;
  for (const reading of READINGS) {
    const dir = assemblePackage(stage, listings[reading], reading);
    // npm ci unpacks some 11,000 files; a second package with the same manifest and lockfile gets the same tree, so
    // it links to the first one's node_modules instead (Node resolves through the link) — any difference installs anew.
    const install =
      installed !== undefined && sameManifests(installed.dir, dir)
        ? linkDependencies(installed.dir, dir)
        : await installProductionDependencies(dir);
    if (installed === undefined && install.code === 0) installed = { dir, install };
    const loaded =
      install.code === 0
        ? await captureRegistrations(packageMain(dir), dir)
        : { code: -1, stdout: "", stderr: "not loaded: install failed" };
    packages.set(reading, { dir, files: listings[reading], install, loaded });
  }
  const fromSource = await capturingSource;
  expect(withoutStack(fromSource.stderr)).toBe("");
  source = JSON.parse(fromSource.stdout) as CapturedRegistrations;
  for (const [reading, built] of packages) {
    const app = sizeOf(built.dir, { skip: "node_modules" });
    const modules = sizeOf(path.join(built.dir, "node_modules"));
    const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);
    console.info(
      `deploy package (${reading} reading): ${app.files + modules.files} files, ${mb(app.bytes + modules.bytes)} MB unpacked — ` +
        `${app.files} app files (${mb(app.bytes)} MB) + node_modules ${modules.files} files (${mb(modules.bytes)} MB)`,
    );
  }
}, 300_000);

afterAll(() => {
  for (const dir of [stage, ...[...packages.values()].map((built) => built.dir)])
    if (dir !== "") rmSync(dir, { recursive: true, force: true });
});

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

describe("Core Tools' reading of .funcignore (port of its GitIgnoreParser)", () => {
  it("anchors patterns at the app root: src/ drops src/ but not dist/src/; *.ts only root files; ! re-includes", () => {
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
});

describe("the deploy package, built from .funcignore both ways", () => {
  it("both readings select the same files: the build output with dist/src, host.json and the manifests; no sources, tests or tooling", () => {
    const coreTools = packages.get("core-tools")?.files ?? [];
    const git = packages.get("git")?.files ?? [];
    expect(git).toEqual(coreTools);
    for (const files of [coreTools, git]) {
      expect(files).toEqual(
        expect.arrayContaining([
          "host.json",
          "package.json",
          "package-lock.json",
          "dist/functions/index.js",
          "dist/src/app/context.js",
        ]),
      );
      expect(
        files.filter(
          (file) =>
            /^(src|functions|test|scripts|infra|docs|\.ci)\//.test(file) ||
            /(?<!\.d)\.ts$/.test(file) ||
            file.startsWith("local.settings"),
        ),
      ).toEqual([]);
    }
  });

  it.each(READINGS)(
    "%s reading: production dependencies install from the lockfile and main registers every function with its bindings",
    (reading) => {
      const built = packages.get(reading);
      expect(built?.install.code, withoutStack(built?.install.stderr)).toBe(0);
      expect(built?.loaded.code, withoutStack(built?.loaded.stderr)).toBe(0);
      const captured = JSON.parse(built?.loaded.stdout ?? "") as CapturedRegistrations;

      // Exactly what the source tree registers, binding for binding, and the same hooks.
      const byName = (value: CapturedRegistrations) =>
        [...value.functions].sort((a, b) => a.name.localeCompare(b.name));
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
      expect(trigger(captured, "submitJob")).toMatchObject({
        type: "httpTrigger",
        route: "jobs",
        methods: ["POST"],
        authLevel: "function",
      });
      expect(trigger(captured, "getJob")).toMatchObject({
        type: "httpTrigger",
        route: "jobs/{id}",
        methods: ["GET"],
        authLevel: "function",
      });
      expect(trigger(captured, "getLeader")).toMatchObject({
        type: "httpTrigger",
        route: "leader",
        methods: ["GET"],
        authLevel: "function",
      });
      expect(trigger(captured, "stepDown")).toMatchObject({
        type: "httpTrigger",
        route: "leader/step-down",
        methods: ["POST"],
        authLevel: "function",
      });
    },
  );

  it("production dependencies only: no development dependency is installed", () => {
    const manifest = JSON.parse(readFileSync(path.join(REPO_ROOT, "package.json"), "utf8")) as {
      devDependencies: Record<string, string>;
    };
    for (const reading of READINGS) {
      const dir = packages.get(reading)?.dir ?? "";
      const installed = Object.keys(manifest.devDependencies).filter((name) =>
        existsSync(path.join(dir, "node_modules", name)),
      );
      expect(installed, reading).toEqual([]);
    }
  });
});
