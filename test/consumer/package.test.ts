import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { execFile } from "node:child_process";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { InstanceProcess, lastOutput, type InstanceState } from "../../dev/src/local/instances";
import { delay } from "../../src/library/util/delay";
import { useAzurite } from "../support/azuriteFixture";
import { compile, installProject, removeProject, REMOVE_TIMEOUT_MS } from "./project";

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

  it("ships built output, the Bicep module for users' apps, README and LICENSE only: no sources, tests, scripts or the repo's infra", () => {
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
    // npm always packs the file `main` names: this repo's own Function app entry, which `exports` does not expose.
    const others = paths.filter((path) => !/^dist\/(esm|commonjs)\/(.*\.(js|d\.ts)|package\.json)$/.test(path));
    expect(others.sort()).toEqual([
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
    // Deep imports stay private: only the entries in `exports` resolve.
    await expect(
      run(process.execPath, ["-e", 'require("azure-leader-coordinator/dist/commonjs/app/context.js")'], {
        cwd: project,
      }),
    ).rejects.toThrow(/ERR_PACKAGE_PATH_NOT_EXPORTED/);
  });

  it("runs as a Function app on the local host: a job of the user's async kind, submitted over HTTP, completes with the right aggregate", async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `item ${i} has ${"word ".repeat(i % 5)}here`);
    const expected = texts.reduce(
      (sum, text) => {
        const words = text.split(/\s+/).filter((word) => word !== "");
        return { words: sum.words + words.length, letters: sum.letters + words.join("").length };
      },
      { words: 0, letters: 0 },
    );
    const ready = Promise.withResolvers<InstanceState>();
    const logs: string[] = [];
    const instance = new InstanceProcess(
      "consumer-1",
      {
        PATH: process.env.PATH,
        COORDINATION_STORAGE: storage.azurite.connectionString,
        AzureWebJobsStorage: storage.azurite.connectionString,
        WEBSITE_SITE_NAME: "consumer-app",
        LOCAL_APP_ENTRY: join(project, "dist", "index.js"),
        LOCAL_HOST_JSON: join(project, "host.json"),
        LOCAL_MESSAGE_LEASE_SECONDS: "30",
        COORDINATOR_SCHEDULE: "*/2 * * * * *",
        // A step must end before the next tick: the app refuses a budget as long as the interval.
        STEP_BUDGET_MS: "1500",
      },
      {
        onReady: (state) => ready.resolve(state),
        onEvent: () => undefined,
        onLog: (_state, line) => logs.push(`${line.level}: ${line.message}`),
        onExit: (state) => ready.reject(new Error(`the instance exited:\n${lastOutput(state)}`)),
      },
    );
    try {
      const { httpPort } = await ready.promise;
      const base = `http://127.0.0.1:${httpPort ?? 0}/api/words`;
      const submitted = await fetch(`${base}/jobs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ kind: "word-count", items: texts.map((inline) => ({ inline })) }),
      });
      const answer = (await submitted.json()) as { id: string };
      expect(submitted.status, JSON.stringify(answer)).toBe(202);
      const { id } = answer;
      let status: { status: string; aggregate?: unknown; progress?: unknown } = { status: "pending" };
      for (let poll = 0; poll < 240 && !["completed", "failed"].includes(status.status); poll++) {
        await delay(500);
        status = (await (await fetch(`${base}/jobs/${id}`)).json()) as typeof status;
      }
      expect(status, logs.slice(-20).join("\n")).toMatchObject({
        status: "completed",
        progress: { total: 40, done: 40, failed: 0 },
        aggregate: { ...expected, distinctKeys: 40 },
      });
      expect((await fetch(`${base}/status`)).status).toBe(200);
    } finally {
      await instance.stop(10_000);
    }
  }, 180_000);
});
