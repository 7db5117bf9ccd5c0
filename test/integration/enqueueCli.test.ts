import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { createCoordinatorApp } from "../../src/app/context";
import { getJobStatus, submitJob } from "../../src/app/operations";
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
    const blobsBefore = await app.system.list("", 10_000);
    const dir = mkdtempSync(join(tmpdir(), "enqueue-"));
    const file = join(dir, "bad.json");
    writeFileSync(file, JSON.stringify({ kind: "group-by", params: { format: "csv" }, items: [] }));
    const result = run(["--file", file]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/items: a job needs at least one item/);
    expect(await app.system.list("", 10_000)).toEqual(blobsBefore);
  });

  const upload = async (name: string, text: string): Promise<void> => {
    const container = env.blobService().getContainerClient(inputs);
    await container.createIfNotExists();
    await container.getBlockBlobClient(name).upload(text, Buffer.byteLength(text));
  };

  it("--prefix makes one item per blob under the prefix", async () => {
    const app = createCoordinatorApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    await upload("sales/2026/a.csv", "region,amount\neu,1\n");
    await upload("sales/2026/b.csv", "region,amount\nus,2\n");
    const result = run(["--prefix", "sales/2026/", "--kind", "group-by", "--params", '{"format":"csv","keyField":"region","valueField":"amount"}']);
    expect(result.stderr).toBe("");
    const id = /Submitted job ([0-9a-f-]{36}) with 2 items/.exec(result.stdout)?.[1];
    expect(await getJobStatus(app, id ?? "")).toMatchObject({ status: "pending", progress: { total: 2 } });
  });

  it("--prefix lists the input container only: user blobs under jobs/ are items, the app's own files never are", async () => {
    const app = createCoordinatorApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    await upload("jobs/y.csv", "region,amount\neu,1\n");
    await upload("jobs/z.csv", "region,amount\nus,2\n");
    const earlier = await submitJob(app, { kind: "group-by", params: { format: "csv", keyField: "region", valueField: "amount" }, items: [{ inline: "region,amount\neu,1\n" }] });
    expect(earlier.ok).toBe(true);
    const result = run(["--prefix", "jobs/", "--kind", "group-by", "--params", '{"format":"csv","keyField":"region","valueField":"amount"}']);
    expect(result.stderr).toBe("");
    const id = /Submitted job ([0-9a-f-]{36}) with 2 items/.exec(result.stdout)?.[1];
    expect(await getJobStatus(app, id ?? "")).toMatchObject({ status: "pending", progress: { total: 2 } });
  });

  it("--manifest uploads an NDJSON file to manifests/ in the input container and submits a job naming it", async () => {
    const app = createCoordinatorApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    await upload("sales/2026/c.csv", "region,amount\neu,1\n");
    const file = join(mkdtempSync(join(tmpdir(), "enqueue-")), "my items.ndjson");
    writeFileSync(file, ['{"blob":"sales/2026/c.csv"}', '{"inline":"region,amount\\nus,2\\n"}', '{"inline":"region,amount\\nus,3\\n"}', ""].join("\n"));
    const result = run(["--manifest", file, "--kind", "group-by", "--params", '{"format":"csv","keyField":"region","valueField":"amount"}']);
    expect(result.stderr).toBe("");
    const name = /as (manifests\/my_items-[0-9a-f]{8}\.ndjson) in /.exec(result.stdout)?.[1];
    expect(name).toBeDefined();
    expect(await app.inputs.readText(name ?? "")).toBe(readFileSync(file, "utf8"));
    const id = /Submitted job ([0-9a-f-]{36}) with 3 items/.exec(result.stdout)?.[1];
    expect(await getJobStatus(app, id ?? "")).toMatchObject({ status: "pending", progress: { total: 3 } });
  });

  it("explains bad flags with the usage", () => {
    const result = run(["--prefix", "sales/"]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/--prefix needs --kind and --params/);
    expect(run(["--manifest", "x.ndjson", "--prefix", "a/"]).stderr).toMatch(/Give exactly one of --file, --prefix or --manifest/);
  });
});
