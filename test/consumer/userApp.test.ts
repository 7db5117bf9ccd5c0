import { execFile } from "node:child_process";
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { compile, installProject, removeProject, REMOVE_TIMEOUT_MS } from "./project";

/**
 * Issue 33's done-criteria (a) and (b): a user's own app (test/consumer/app) in a project outside the repo, with only
 * the packed package installed (test/consumer/packOnce.ts) — plus what a user installs beside it: @azure/functions,
 * azurite, vitest — (a) runs on 3 instances through the package's bin, `azure-leader-coordinator local`, with a job of
 * its own kind, the leader killed mid-job, the job completing with the right aggregate; (b) passes a vitest test of
 * its own (fixtures/leaderKill.user-test.ts) through the `azure-leader-coordinator/testing` entry that kills the
 * leader mid-job. One install serves both.
 */

const run = promisify(execFile);

/** Runs a command of the project with a user's environment; its output on failure says what went wrong. */
async function userCommand(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  try {
    return (await run(file, args, { cwd, timeout: 240_000, maxBuffer: 32 * 1024 * 1024, env })).stdout;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(
      `${file} ${args.join(" ")} failed: ${failed.message}\n${failed.stdout ?? ""}\n${failed.stderr ?? ""}`,
    );
  }
}

/** The environment a user's shell would have: none of this repo's test settings, no storage of ours. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { PATH, HOME, TMPDIR } = process.env;
  return { PATH, HOME, TMPDIR, CI: "1", NO_COLOR: "1", ...extra };
}

describe("a user's own app, from the packed package alone (bin and testing entry)", () => {
  let project = "";

  beforeAll(async () => {
    project = await installProject(join(__dirname, "app"), inject("packed").tarball, [
      "@azure/functions",
      "@types/node",
      "azurite",
      "vitest",
    ]);
    await compile(project);
  }, 600_000);

  afterAll(() => removeProject(project), REMOVE_TIMEOUT_MS);

  it("(a) `azure-leader-coordinator local` runs its app on 3 instances with a job of its own kind; the leader is killed mid-job and the job completes with the right aggregate", async () => {
    const texts = Array.from({ length: 40 }, (_, i) => `line ${i}: ${"some words ".repeat(1 + (i % 4))}end`);
    const words = texts.map((text) => text.split(/\s+/).filter((word) => word !== ""));
    const expected = {
      words: words.reduce((sum, list) => sum + list.length, 0),
      letters: words.reduce((sum, list) => sum + list.join("").length, 0),
      distinctKeys: 40,
    };
    writeFileSync(
      join(project, "job.json"),
      JSON.stringify({ kind: "word-count", items: texts.map((inline) => ({ inline })) }),
    );
    const stdout = await userCommand(
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
    const stdout = await userCommand(
      join(project, "node_modules", ".bin", "vitest"),
      ["run", "--reporter", "verbose"],
      project,
      userEnv(),
    );
    expect(stdout).toMatch(/✓ .*completes a job of my own kind while its leader is killed mid-job/);
    expect(stdout).toMatch(/Tests {2}1 passed \(1\)/);
  }, 300_000);
});
