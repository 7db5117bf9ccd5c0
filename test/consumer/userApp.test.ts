import { execFile } from "node:child_process";
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { compile, installProject, removeProject, REMOVE_TIMEOUT_MS } from "./project";

/**
 * Issue 33's done-criteria (a) and (b), and issue 44's (b): a user's own app (test/consumer/app) in a project outside
 * the repo, with only the packed packages installed (test/consumer/packOnce.ts: the runtime and, as a user installs it
 * for development, azure-leader-coordinator-dev, which brings Azurite) — plus @azure/functions and vitest — (a) runs on
 * 3 instances through the development package's bin, `azure-leader-coordinator-dev local`, with a job of its own kind,
 * the leader killed mid-job, the job completing with the right aggregate, and a job of a kind it lacks is refused
 * before anything starts; (b) passes a vitest test of its own (fixtures/leaderKill.user-test.ts) through the testing
 * entry that kills the leader mid-job, and a unit test of its kind alone (app/test/wordCount.user-test.ts, runKind).
 * One install serves all.
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
    const packed = inject("packed");
    project = await installProject(
      join(__dirname, "app"),
      [packed.tarball, packed.dev.tarball],
      ["@azure/functions", "@types/node", "vitest"],
    );
    await compile(project);
  }, 600_000);

  afterAll(() => removeProject(project), REMOVE_TIMEOUT_MS);

  it("(a) `azure-leader-coordinator-dev local` runs its app on 3 instances with a job of its own kind; the leader is killed mid-job and the job completes with the right aggregate", async () => {
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
      join(project, "node_modules", ".bin", "azure-leader-coordinator-dev"),
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

  it("(a) a job of a kind the app lacks is refused before Azurite or any instance starts, naming the app's kinds", async () => {
    writeFileSync(join(project, "typo.json"), JSON.stringify({ kind: "word-cuont", items: [{ inline: "a b" }] }));
    const result = await run(
      join(project, "node_modules", ".bin", "azure-leader-coordinator-dev"),
      ["local", "--job", "typo.json"],
      { cwd: project, env: userEnv(), timeout: 120_000 },
    ).then(
      () => ({ code: 0, stdout: "", stderr: "" }),
      (error: unknown) => error as { code: number; stdout: string; stderr: string },
    );
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^Your app would refuse typo\.json \(its kinds: word-count\); nothing was started:/);
    expect(result.stderr).toMatch(/kind: .*word-cuont/);
    expect(result.stdout).not.toMatch(/Azurite|instance-1/);
  }, 120_000);

  it("(b) its own vitest test, through azure-leader-coordinator-dev/testing, kills the leader mid-job and sees the job complete", async () => {
    mkdirSync(join(project, "test"), { recursive: true });
    cpSync(join(__dirname, "fixtures", "leaderKill.user-test.ts"), join(project, "test", "leaderKill.test.ts"));
    const stdout = await userCommand(
      join(project, "node_modules", ".bin", "vitest"),
      ["run", "--reporter", "verbose", "test/leaderKill.test.ts"],
      project,
      userEnv(),
    );
    expect(stdout).toMatch(/✓ .*completes a job of my own kind while its leader is killed mid-job/);
    expect(stdout).toMatch(/Tests {2}1 passed \(1\)/);
  }, 300_000);

  it("(b) its own unit test of its kind alone (runKind) passes, without storage or a cluster", async () => {
    mkdirSync(join(project, "test"), { recursive: true });
    // The user's test is part of the app's project (test/consumer/app/test/): named as their vitest finds it.
    cpSync(join(project, "test", "wordCount.user-test.ts"), join(project, "test", "wordCount.test.ts"));
    const stdout = await userCommand(
      join(project, "node_modules", ".bin", "vitest"),
      ["run", "--reporter", "verbose", "test/wordCount.test.ts"],
      project,
      userEnv(),
    );
    expect(stdout).toMatch(/✓ .*counts the words and letters of my items, and fails an item that is not text alone/);
    expect(stdout).toMatch(/Tests {2}1 passed \(1\)/);
    // Reported, not asserted: the kind's own run, and the whole vitest run (start-up included), as vitest printed them.
    console.info(
      [/runKind\(word-count, 3 items\) took [\d.]+ ms/, /Duration {2}.*/]
        .map((pattern) => pattern.exec(stdout)?.[0] ?? "")
        .join("; "),
    );
  }, 120_000);
});
