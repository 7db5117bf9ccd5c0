import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { describeSize, installSize } from "../../scripts/verification/bench/deploy/measure";
import { useAzurite } from "../support/azuriteFixture";
import { compile, pinned, removeProject, REMOVE_TIMEOUT_MS, sh } from "./project";
import { runWordCountJob } from "./wordCountJob";

/**
 * Issue 44's done-criterion (c): a user's project outside the repo — the consumer app (test/consumer/app) with the
 * runtime package and @azure/functions as dependencies, the development package (which brings Azurite) as a dev
 * dependency, installed from the packed tarballs with a lockfile as `npm install` makes it — builds its production
 * deploy folder with `azure-leader-coordinator-dev package`. The folder holds no Azurite and no development tools,
 * and it runs: its own entry, on the local host, completes a job of the app's kind. Its size is reported, not asserted
 * (`npm run bench:deploy` measures it against the package before the split).
 */

const run = promisify(execFile);

describe("a user's production deploy folder, from the packed packages (issue 44, (c))", () => {
  const storage = useAzurite();
  let project = "";
  let deploy = "";

  beforeAll(async () => {
    const packed = inject("packed");
    project = join(mkdtempSync(join(tmpdir(), "consumer-deploy-")), "app");
    cpSync(resolve(__dirname, "app"), project, { recursive: true });
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as Record<string, unknown>;
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({
        ...manifest,
        dependencies: { "azure-leader-coordinator": packed.tarball, "@azure/functions": pinned("@azure/functions") },
        devDependencies: { "azure-leader-coordinator-dev": packed.dev.tarball, "@types/node": pinned("@types/node") },
      }),
    );
    // A user's `npm install` (which writes their lockfile), their build, then the documented command.
    await sh("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund"], project);
    await compile(project);
    const bin = join(project, "node_modules", ".bin", "azure-leader-coordinator-dev");
    await run(bin, ["package"], { cwd: project, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 });
    deploy = join(project, ".deploy");
  }, 600_000);

  afterAll(() => removeProject(project), REMOVE_TIMEOUT_MS);

  it("holds the build, host.json and the production dependencies: no Azurite, no development tools", () => {
    for (const file of ["host.json", "package.json", "package-lock.json", join("dist", "index.js")])
      expect(existsSync(join(deploy, file)), file).toBe(true);
    for (const present of ["azure-leader-coordinator", "@azure/functions", "@azure/storage-blob"])
      expect(existsSync(join(deploy, "node_modules", present)), present).toBe(true);
    for (const absent of ["azurite", "azure-leader-coordinator-dev", "@types/node", "tsx"])
      expect(existsSync(join(deploy, "node_modules", absent)), absent).toBe(false);
    expect(existsSync(join(deploy, "src")) || existsSync(join(deploy, "test"))).toBe(false);
    // Reported, not asserted: the bench (npm run bench:deploy) measures it against the package before the split.
    console.info(
      `deploy folder: ${describeSize(installSize(deploy))}; the development install: ${describeSize(installSize(project))}`,
    );
  });

  it("runs: its own entry, on the local host, completes a job of the app's kind with the right aggregate", async () => {
    await runWordCountJob(
      join(deploy, "dist", "index.js"),
      join(deploy, "host.json"),
      storage.azurite.connectionString,
    );
  }, 180_000);
});
