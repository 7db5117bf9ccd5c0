import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { useAzurite } from "../support/azuriteFixture";
import { compile, installProject, removeProject, REMOVE_TIMEOUT_MS } from "./project";
import { runWordCountJob } from "./wordCountJob";

/**
 * The package as a user meets it (issue 20): `npm pack` (once per run, test/consumer/packOnce.ts), installed from the
 * tarball into a project outside the repo (its own tsconfig: NodeNext, strict), compiled, imported, and run as a
 * Function app on the local Functions host with the user's own async task kind; a job submitted over HTTP completes
 * with the right aggregate. If this fails, the package is broken for users.
 */

const FIXTURE = resolve(__dirname, "app");
const run = promisify(execFile);

describe("the packed package in a user's project outside the repo (consumer test)", () => {
  const storage = useAzurite();
  const packed = inject("packed");
  let project = "";

  beforeAll(async () => {
    // The user's `npm install <tarball>`, then their build.
    project = await installProject(FIXTURE, packed.tarball, ["@azure/functions", "@types/node"]);
    await compile(project);
  }, 600_000);

  afterAll(() => removeProject(project), REMOVE_TIMEOUT_MS);

  it("ships built output, the Bicep module for users' apps, README, CHANGELOG and LICENSE only: no sources, tests, scripts, the repo's infra or the development tools", () => {
    const paths = packed.files;
    expect(paths).toEqual(expect.arrayContaining(["package.json", "README.md", "LICENSE"]));
    for (const build of ["esm", "commonjs"])
      expect(paths).toEqual(
        expect.arrayContaining([
          `dist/${build}/package.json`,
          `dist/${build}/index.js`,
          `dist/${build}/index.d.ts`,
          `dist/${build}/library/index.d.ts`,
        ]),
      );
    expect(paths.filter((path) => /(^|\/)(local|testing)\//.test(path))).toEqual([]);
    // npm always packs the file `main` names: this repo's own Function app entry, which `exports` does not expose.
    const others = paths.filter((path) => !/^dist\/(esm|commonjs)\/(.*\.(js|d\.ts)|package\.json)$/.test(path));
    expect(others.sort()).toEqual([
      "CHANGELOG.md",
      "LICENSE",
      "README.md",
      "bicep/coordinator.bicep",
      "dist/functions/index.js",
      "package.json",
    ]);
  });

  it("compiles in the user's project (NodeNext, strict, the package's declarations checked) and with the Functions template's commonjs settings", async () => {
    // The beforeAll compiled it with tsconfig.json (NodeNext). Function apps made from the TypeScript template compile
    // as commonjs (node10 resolution, no esModuleInterop, libraries type-checked): the `/leader-election` entry must
    // resolve there too (typesVersions), and nothing the declarations reach may need esModuleInterop.
    writeFileSync(
      join(project, "tsconfig.template.json"),
      JSON.stringify({
        compilerOptions: {
          module: "commonjs",
          target: "ES2022",
          strict: false,
          types: ["node"],
          outDir: "dist-template",
          rootDir: "src",
        },
        include: ["src"],
      }),
    );
    await compile(project, "tsconfig.template.json");
    expect(readFileSync(join(project, "dist", "index.js"), "utf8")).toContain('require("azure-leader-coordinator")');
  });

  it("the public declarations reach no schema library's types: users need neither zod nor its compiler settings", () => {
    const installed = join(project, "node_modules", "azure-leader-coordinator");
    const seen = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const text = readFileSync(file, "utf8");
      expect(text, file).not.toMatch(/from "zod"|import\("zod"\)/);
      for (const [, spec] of text.matchAll(/(?:from |import\()"(\.[^"]+)"/g)) {
        const base = resolve(dirname(file), spec ?? "").replace(/\.js$/, "");
        const next = [`${base}.d.ts`, join(base, "index.d.ts")].find((candidate) => existsSync(candidate));
        if (next !== undefined) visit(next);
      }
    };
    for (const build of ["esm", "commonjs"]) {
      visit(join(installed, "dist", build, "index.d.ts"));
      visit(join(installed, "dist", build, "library", "index.d.ts"));
    }
    expect(seen.size).toBeGreaterThan(10);
  });

  it("importing either entry registers nothing, prints nothing and does not load @azure/functions", async () => {
    const script = [
      'const main = require("azure-leader-coordinator");',
      'const library = require("azure-leader-coordinator/leader-election");',
      'const loaded = Object.keys(require.cache).filter((file) => file.includes("@azure/functions"));',
      "console.log(JSON.stringify({ main: Object.keys(main).sort(), library: Object.keys(library).sort(), loaded }));",
    ].join("\n");
    const { stdout, stderr } = await run(process.execPath, ["-e", script], { cwd: project });
    expect(stderr).toBe("");
    const seen = JSON.parse(stdout) as { main: string[]; library: string[]; loaded: string[] };
    expect(seen.loaded).toEqual([]);
    expect(seen.main).toEqual(
      expect.arrayContaining([
        "registerCoordinator",
        "createCoordinatorClient",
        "defineTaskKind",
        "ItemError",
        "groupByKind",
      ]),
    );
    expect(seen.library).toEqual(
      expect.arrayContaining(["LeaderElector", "FencedStateStore", "BlobLeaseStore", "BlobStateStore"]),
    );
    // Deep imports stay private: only the entries in `exports` resolve. The testing entry moved to the development
    // package (CHANGELOG.md says how to move).
    for (const deep of ["azure-leader-coordinator/dist/commonjs/app/context.js", "azure-leader-coordinator/testing"])
      await expect(run(process.execPath, ["-e", `require(${JSON.stringify(deep)})`], { cwd: project })).rejects.toThrow(
        /ERR_PACKAGE_PATH_NOT_EXPORTED/,
      );
  });

  it("declares no dependency on Azurite or the development tools in any form, and its bin says where `local` went", async () => {
    const manifest = JSON.parse(
      readFileSync(join(project, "node_modules", "azure-leader-coordinator", "package.json"), "utf8"),
    ) as Record<string, Record<string, string> | undefined>;
    for (const field of ["dependencies", "peerDependencies", "optionalDependencies", "peerDependenciesMeta"])
      expect(Object.keys(manifest[field] ?? {}), field).not.toEqual(
        expect.arrayContaining([expect.stringMatching(/^azurite$|^azure-leader-coordinator-dev$/)]),
      );
    expect(existsSync(join(project, "node_modules", "azurite"))).toBe(false);
    const bin = join(project, "node_modules", ".bin", "azure-leader-coordinator");
    const moved = await run(bin, ["local"], { cwd: project }).then(
      () => ({ code: 0, stderr: "" }),
      (error: unknown) => error as { code: number; stderr: string },
    );
    expect(moved.code).toBe(2);
    expect(moved.stderr).toMatch(
      /npm install --save-dev azure-leader-coordinator-dev, then npx azure-leader-coordinator-dev local/,
    );
    const help = await run(bin, ["enqueue", "--help"], { cwd: project });
    expect(help.stdout).toMatch(/^Usage:\n {2}azure-leader-coordinator enqueue --file JOB\.json --url URL/);
  });

  it("runs as a Function app on the local host: a job of the user's async kind, submitted over HTTP, completes with the right aggregate", async () => {
    await runWordCountJob(
      join(project, "dist", "index.js"),
      join(project, "host.json"),
      storage.azurite.connectionString,
    );
  }, 180_000);
});
