import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { createCoordinatorApp } from "../../src/app/context";
import { getJobStatus } from "../../src/app/operations";
import { uniqueName, useAzurite } from "../support/azuriteFixture";

const ROOT = resolve(__dirname, "..", "..");

describe("enqueue CLI (npm run enqueue) against Azurite", () => {
  const env = useAzurite();
  const inputs = uniqueName("inputs");
  const run = (args: string[]): { status: number | null; stdout: string; stderr: string } => {
    const result = spawnSync(process.execPath, ["--import", "tsx", join(ROOT, "scripts", "enqueue.ts"), ...args], {
      cwd: ROOT,
      env: { ...process.env, COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs },
      encoding: "utf8",
      timeout: 60_000,
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  it("submits the example job from a file; the job is then pending with its items", async () => {
    const result = run(["--file", join(ROOT, "examples", "sales-job.json")]);
    expect(result.stderr).toBe("");
    const id = /Submitted job ([0-9a-f-]{36}) with 2 items/.exec(result.stdout)?.[1];
    expect(id).toBeDefined();
    const app = createCoordinatorApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    expect(await getJobStatus(app, id ?? "")).toMatchObject({ status: "pending", progress: { total: 2 } });
  });

  it("refuses a bad job with the field errors and exit code 2, storing nothing", async () => {
    const app = createCoordinatorApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    const blobsBefore = await app.files.list("", 10_000);
    const dir = mkdtempSync(join(tmpdir(), "enqueue-"));
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ kind: "group-by", params: { format: "csv" }, items: [] }));
    const result = run(["--file", file]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/items: a job needs at least one item/);
    expect(await app.files.list("", 10_000)).toEqual(blobsBefore);
  });

  it("--prefix makes one item per blob under the prefix", async () => {
    const app = createCoordinatorApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    await app.files.writeText("sales/2026/a.csv", "region,amount\neu,1\n");
    await app.files.writeText("sales/2026/b.csv", "region,amount\nus,2\n");
    const result = run(["--prefix", "sales/2026/", "--kind", "group-by", "--params", '{"format":"csv","keyField":"region","valueField":"amount"}']);
    expect(result.stderr).toBe("");
    const id = /Submitted job ([0-9a-f-]{36}) with 2 items/.exec(result.stdout)?.[1];
    expect(await getJobStatus(app, id ?? "")).toMatchObject({ status: "pending", progress: { total: 2 } });
  });

  it("explains bad flags with the usage", () => {
    const result = run(["--prefix", "sales/"]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/--prefix needs --kind and --params/);
  });
});
