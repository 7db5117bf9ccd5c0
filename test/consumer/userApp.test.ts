import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * Issue 33's done-criteria (a) and (b): a user's own app in a project outside the repo, with only the packed package
 * installed (no clone) — plus what a user installs beside it: @azure/functions, azurite, vitest — (a) runs on 3
 * instances through the package's bin, `azure-leader-coordinator local`, with a job of its own kind, the leader
 * killed mid-job, the job completing with the right aggregate; (b) passes a vitest test of its own through the
 * `azure-leader-coordinator/testing` entry that kills the leader mid-job. One install serves both.
 */

const REPO = resolve(__dirname, "..", "..");
const run = promisify(execFile);

/** The version this repo's lockfile pins for a package (what `npm ci` installed, so the npm cache has it). */
function pinned(name: string): string {
  return (JSON.parse(readFileSync(join(REPO, "node_modules", name, "package.json"), "utf8")) as { version: string })
    .version;
}

/** Runs a command; its output on failure says what went wrong. */
async function sh(
  file: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 300_000,
): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(file, args, { cwd, timeout: timeoutMs, maxBuffer: 32 * 1024 * 1024, env });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${file} ${args.join(" ")} failed in ${cwd}: ${failed.message}\n${failed.stdout ?? ""}\n${failed.stderr ?? ""}`,
    );
  }
}

/** The environment a user's shell would have: none of this repo's test settings, no storage of ours. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { PATH, HOME, TMPDIR } = process.env;
  return { PATH, HOME, TMPDIR, CI: "1", ...extra };
}

describe("a user's own app, from the packed package alone (bin and testing entry)", () => {
  const work = mkdtempSync(join(tmpdir(), "consumer-user-"));
  const project = join(work, "app");

  beforeAll(async () => {
    const { stdout } = await sh("npm", ["pack", "--json", "--pack-destination", work], REPO);
    const [info] = JSON.parse(stdout) as { filename: string }[];
    if (info === undefined) throw new Error("npm pack printed nothing");
    cpSync(join(__dirname, "app"), project, { recursive: true });
    await sh(
      "npm",
      [
        "install",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        "--no-package-lock",
        join(work, info.filename),
        `@azure/functions@${pinned("@azure/functions")}`,
        `@types/node@${pinned("@types/node")}`,
        `azurite@${pinned("azurite")}`,
        `vitest@${pinned("vitest")}`,
      ],
      project,
    );
    await sh(process.execPath, [join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], project);
  }, 600_000);

  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
  });

  it("(a) `azure-leader-coordinator local` runs its app on 3 instances with a job of its own kind; the leader is killed mid-job and the job completes with the right aggregate", async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `line ${i}: ${"some words ".repeat(1 + (i % 4))}end`);
    const words = texts.map((text) => text.split(/\s+/).filter((word) => word !== ""));
    const expected = {
      words: words.reduce((sum, list) => sum + list.length, 0),
      letters: words.reduce((sum, list) => sum + list.join("").length, 0),
      distinctKeys: 40,
    };
    writeFileSync(join(project, "job.json"), JSON.stringify({ kind: "word-count", items: texts.map((inline) => ({ inline })) }));
    const { stdout } = await sh(
      join(project, "node_modules", ".bin", "azure-leader-coordinator"),
      ["local", "--instances", "3", "--job", "job.json", "--kill-leader-after", "0"],
      project,
      userEnv({ WORK_UNIT_MAX_ITEMS: "1", DISPATCH_BATCH_SIZE: "2", WORD_COUNT_DELAY_MS: "200" }),
    );
    expect(stdout).toMatch(/^Job [0-9a-f-]{36} \(job\.json\): completed — done 40\/40, failed 0$/m);
    expect(stdout).toMatch(/^Kill: killed instance-\d, the leader \(epoch \d+\), with the job at \d+\/40 items$/m);
    const aggregate = /^Aggregate: (.*)$/m.exec(stdout)?.[1];
    expect(JSON.parse(aggregate ?? "null")).toEqual(expected);
    // Its own host.json was read: nothing it lacks was reported.
    expect(stdout).not.toContain("lacks settings the coordinator relies on");
  }, 300_000);

  it("(b) its own vitest test, through azure-leader-coordinator/testing, kills the leader mid-job and sees the job complete", async () => {
    mkdirSync(join(project, "test"), { recursive: true });
    cpSync(join(__dirname, "fixtures", "leaderKill.user-test.ts"), join(project, "test", "leaderKill.test.ts"));
    const { stdout } = await sh(
      join(project, "node_modules", ".bin", "vitest"),
      ["run", "--reporter", "verbose"],
      project,
      userEnv(),
    );
    expect(stdout).toMatch(/✓ .*completes a job of my own kind while its leader is killed mid-job/);
    expect(stdout).toMatch(/Tests {2}1 passed \(1\)/);
  }, 300_000);
});
