import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { createRepoApp } from "../../scripts/support/repoKinds";
import { getJobStatus, submitJob } from "../../src/app/operations";
import { uniqueName, useAzurite } from "../support/azuriteFixture";

const ROOT = resolve(__dirname, "..", "..");

describe("enqueue CLI (npm run enqueue) against Azurite", () => {
  const env = useAzurite();
  const inputs = uniqueName("inputs");
  const run = (args: string[]): { status: number | null; stdout: string; stderr: string } => {
    const result = spawnSync(
      process.execPath,
      ["--import", "tsx", join(ROOT, "scripts", "tools", "enqueue.ts"), ...args],
      {
        cwd: ROOT,
        env: { ...process.env, COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs },
        encoding: "utf8",
        timeout: 60_000,
      },
    );
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  };

  it("--help prints the usage and exits 0 (it was refused as an unknown flag)", () => {
    const result = run(["--help"]);
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/^Usage:\n {2}npm run enqueue -- --file JOB\.json/);
    expect(result.status).toBe(0);
  });

  it("submits the example job from a file; the job is then pending with its items", async () => {
    const result = run(["--file", join(ROOT, "examples", "sales-job.json")]);
    expect(result.stderr).toBe("");
    const id = /Submitted job ([0-9a-f-]{36}) with 2 items/.exec(result.stdout)?.[1];
    expect(id).toBeDefined();
    const app = createRepoApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    expect(await getJobStatus(app, id ?? "")).toMatchObject({ status: "pending", progress: { total: 2 } });
  });

  it("refuses a bad job with the field errors and exit code 2, storing nothing", async () => {
    const app = createRepoApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
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
    const app = createRepoApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    await upload("sales/2026/a.csv", "region,amount\neu,1\n");
    await upload("sales/2026/b.csv", "region,amount\nus,2\n");
    const result = run([
      "--prefix",
      "sales/2026/",
      "--kind",
      "group-by",
      "--params",
      '{"format":"csv","keyField":"region","valueField":"amount"}',
    ]);
    expect(result.stderr).toBe("");
    const id = /Submitted job ([0-9a-f-]{36}) with 2 items/.exec(result.stdout)?.[1];
    expect(await getJobStatus(app, id ?? "")).toMatchObject({ status: "pending", progress: { total: 2 } });
  });

  it("--prefix lists the input container only: user blobs under jobs/ are items, the app's own files never are", async () => {
    const app = createRepoApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    await upload("jobs/y.csv", "region,amount\neu,1\n");
    await upload("jobs/z.csv", "region,amount\nus,2\n");
    const earlier = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items: [{ inline: "region,amount\neu,1\n" }],
    });
    expect(earlier.ok).toBe(true);
    const result = run([
      "--prefix",
      "jobs/",
      "--kind",
      "group-by",
      "--params",
      '{"format":"csv","keyField":"region","valueField":"amount"}',
    ]);
    expect(result.stderr).toBe("");
    const id = /Submitted job ([0-9a-f-]{36}) with 2 items/.exec(result.stdout)?.[1];
    expect(await getJobStatus(app, id ?? "")).toMatchObject({ status: "pending", progress: { total: 2 } });
  });

  it("--manifest uploads an NDJSON file to manifests/ in the input container and submits a job naming it", async () => {
    const app = createRepoApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    await upload("sales/2026/c.csv", "region,amount\neu,1\n");
    const file = join(mkdtempSync(join(tmpdir(), "enqueue-")), "my items.ndjson");
    writeFileSync(
      file,
      [
        '{"blob":"sales/2026/c.csv"}',
        '{"inline":"region,amount\\nus,2\\n"}',
        '{"inline":"region,amount\\nus,3\\n"}',
        "",
      ].join("\n"),
    );
    const result = run([
      "--manifest",
      file,
      "--kind",
      "group-by",
      "--params",
      '{"format":"csv","keyField":"region","valueField":"amount"}',
    ]);
    expect(result.stderr).toBe("");
    const name = /as (manifests\/my_items-[0-9a-f]{8}\.ndjson) in /.exec(result.stdout)?.[1];
    expect(name).toBeDefined();
    expect(await app.inputs.readText(name ?? "")).toBe(readFileSync(file, "utf8"));
    const id = /Submitted job ([0-9a-f-]{36}) with 3 items/.exec(result.stdout)?.[1];
    expect(await getJobStatus(app, id ?? "")).toMatchObject({ status: "pending", progress: { total: 3 } });
  });

  it("--job-timeout and --deadline set the job's deadline; a deadline in the past is refused with exit code 2", async () => {
    const app = createRepoApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    const timed = run(["--file", join(ROOT, "examples", "sales-job.json"), "--job-timeout", "3600"]);
    expect(timed.stderr).toBe("");
    const status = await getJobStatus(app, /Submitted job ([0-9a-f-]{36})/.exec(timed.stdout)?.[1] ?? "");
    expect(Date.parse(status?.deadline ?? "") - Date.parse(status?.createdAt ?? "")).toBe(3600_000);
    const deadline = new Date(Date.now() + 86_400_000).toISOString();
    const dated = run(["--file", join(ROOT, "examples", "sales-job.json"), "--deadline", deadline]);
    expect((await getJobStatus(app, /Submitted job ([0-9a-f-]{36})/.exec(dated.stdout)?.[1] ?? ""))?.deadline).toBe(
      deadline,
    );
    const late = run(["--file", join(ROOT, "examples", "sales-job.json"), "--deadline", "2020-01-01T00:00:00Z"]);
    expect(late.status).toBe(2);
    expect(late.stderr).toMatch(/deadline: must be in the future/);
  });

  it("--cancel ID requests cancellation of a job; an unknown id exits 1 naming it", async () => {
    const app = createRepoApp({ COORDINATION_STORAGE: env.azurite.connectionString, INPUT_CONTAINER: inputs });
    const id =
      /Submitted job ([0-9a-f-]{36})/.exec(run(["--file", join(ROOT, "examples", "sales-job.json")]).stdout)?.[1] ?? "";
    const cancelled = run(["--cancel", id]);
    expect(cancelled.stderr).toBe("");
    expect(cancelled.status).toBe(0);
    expect(cancelled.stdout).toMatch(new RegExp(`Cancellation of job ${id} requested`));
    expect(await getJobStatus(app, id)).toMatchObject({ status: "pending", cancelRequested: true });
    const unknown = run(["--cancel", "no-such-job"]);
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toMatch(/No job "no-such-job"/);
  });

  it("explains bad flags with the usage", () => {
    const result = run(["--prefix", "sales/"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/--prefix needs --kind and --params/);
    expect(result.stderr).toMatch(/^Usage:/m);
    expect(run(["--timeout", "0", "--file", "job.json"]).stderr).toMatch(
      /--timeout must be a whole number from 1 to 86400, got "0"/,
    );
    expect(run(["--nope"]).stderr).toMatch(/Unknown option '--nope'/);
    expect(run(["--manifest", "x.ndjson", "--prefix", "a/"]).stderr).toMatch(
      /Give exactly one of --file, --prefix or --manifest/,
    );
    const both = run(["--file", "job.json", "--cancel", "abc"]);
    expect(both.status).toBe(2);
    expect(both.stderr).toMatch(/--cancel takes no other flag/);
  });
});
