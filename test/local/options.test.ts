import { describe, expect, it } from "vitest";
import { aggregatesMatch, createDemoJob } from "../../dev/src/local/demoData";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseLocalArgs as parseIn } from "../../dev/src/cli/localCommand";
import { UsageError } from "../../src/cli/flags";
import { instanceEnv } from "../../dev/src/local/startup";

/** A user's project: package.json whose "main" exists, and a host.json. */
function project(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), "local-flags-"));
  mkdirSync(join(dir, "dist"));
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "user-app", main: "dist/index.js" }));
  writeFileSync(join(dir, "dist", "index.js"), "");
  writeFileSync(join(dir, "host.json"), "{}");
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const PROJECT = project({ "job.json": '{"kind":"mine","params":{},"items":[{"inline":"x"}]}', "bad.json": "{ no" });
const parseLocalArgs = (argv: string[]): ReturnType<typeof parseIn> => parseIn(argv, PROJECT);

describe("azure-leader-coordinator-dev local flags", () => {
  it("runs the project's own app (package.json main) with its host.json and no job by default", () => {
    expect(parseLocalArgs([])).toEqual({
      appEntry: join(PROJECT, "dist", "index.js"),
      hostJsonPath: join(PROJECT, "host.json"),
      job: { kind: "none" },
      instances: 3,
      durationS: undefined,
      schedule: "*/5 * * * * *",
      eventsPath: undefined,
      killLeaderAfterS: undefined,
      timelinePath: undefined,
      apps: 1,
      listenerLockPeriodS: undefined,
      listenerLockRecoveryS: undefined,
    });
  });

  it("reads every flag", () => {
    const options = parseLocalArgs([
      "--instances",
      "5",
      "--duration",
      "90",
      "--schedule",
      "*/2 * * * * *",
      "--events",
      "e.jsonl",
      "--kill-leader-after",
      "20",
      "--demo",
      "--items",
      "50",
    ]);
    expect(options).toMatchObject({
      instances: 5,
      durationS: 90,
      schedule: "*/2 * * * * *",
      eventsPath: "e.jsonl",
      killLeaderAfterS: 20,
      job: { kind: "demo", items: 50 },
    });
    expect(
      parseLocalArgs(["--job", "job.json"].map((arg) => (arg === "job.json" ? join(PROJECT, arg) : arg))),
    ).toMatchObject({
      job: { kind: "submission", body: { kind: "mine", params: {}, items: [{ inline: "x" }] } },
    });
    expect(
      parseLocalArgs(["--apps", "3", "--listener-lock-period", "15", "--listener-lock-recovery", "2.5"]),
    ).toMatchObject({ apps: 3, listenerLockPeriodS: 15, listenerLockRecoveryS: 2.5 });
    expect(parseLocalArgs(["--help"])).toBe("help");
  });

  it("rejects bad values, naming the flag and what is allowed", () => {
    const cases: [string[], string][] = [
      [["--instances", "17"], '--instances must be a whole number from 1 to 16, got "17".'],
      [["--instances", "2.5"], '--instances must be a whole number from 1 to 16, got "2.5".'],
      [["--duration", "soon"], '--duration must be a number from 1 to 86400, got "soon".'],
      [["--demo", "--items", "0"], '--items must be a whole number from 1 to 5000, got "0".'],
      [["--items", "5"], "--items is the demo job's size: it needs --demo."],
      [
        ["--kill-leader-after", "0"],
        "--kill-leader-after needs a job to kill the leader during: give --job FILE or --demo.",
      ],
      [["--demo", "--job", "x.json"], "Give --job FILE or --demo, not both."],
      [["--app", "nope.js"], `--app nope.js: no such file (${join(PROJECT, "nope.js")}). Build your app first?`],
      [
        ["--duration", "10", "--kill-leader-after", "10", "--demo"],
        "--kill-leader-after (10) must be less than --duration (10).",
      ],
      [["--apps", "4"], "--apps (4) must be at most --instances (3)."],
      [["--listener-lock-period", "10"], '--listener-lock-period must be a number from 15 to 60, got "10".'],
    ];
    for (const [argv, message] of cases) expect(() => parseLocalArgs(argv)).toThrow(new UsageError(message));
    expect(() => parseLocalArgs(["--schedule", "*/5 * * * *"])).toThrow(
      /--schedule must be an NCRONTAB expression with six fields/,
    );
    expect(() => parseLocalArgs(["--nope"])).toThrow(/Unknown option '--nope'.*--help/);
    expect(() => parseLocalArgs(["--job", join(PROJECT, "bad.json")])).toThrow(
      /bad\.json is not JSON .*it must look like/,
    );
  });

  it("says how to name the app when package.json has no main, and that it must be built when main is missing", () => {
    const bare = mkdtempSync(join(tmpdir(), "local-flags-"));
    writeFileSync(join(bare, "package.json"), "{}");
    expect(() => parseIn([], bare)).toThrow(/has no "main"\. Name your app's compiled entry with --app/);
    writeFileSync(join(bare, "package.json"), '{"main":"dist/index.js"}');
    expect(() => parseIn([], bare)).toThrow(/does not exist: build your app first/);
  });
});

describe("demo job", () => {
  it("is the same on every run and its expected aggregate adds up the rows", () => {
    const a = createDemoJob(30, "p");
    expect(createDemoJob(30, "p")).toEqual(a);
    const rows = [
      ...a.spec.items.map((item) => ("inline" in item ? item.inline : "")),
      ...a.blobs.map((blob) => blob.text),
    ]
      .flatMap((text) => text.trim().split("\n").slice(1))
      .map((line) => line.split(","));
    expect(rows.length).toBe(Object.values(a.expected).reduce((sum, stats) => sum + stats.count, 0));
    expect(a.spec.items.filter((item) => "blob" in item)).toEqual([
      { blob: "p/item-9.csv" },
      { blob: "p/item-19.csv" },
      { blob: "p/item-29.csv" },
    ]);
  });

  it("compares aggregates by keys and stats", () => {
    const { expected } = createDemoJob(10, "p");
    expect(aggregatesMatch(structuredClone(expected), expected)).toBe(true);
    const [first = ""] = Object.keys(expected);
    expect(aggregatesMatch({ ...expected, [first]: { count: 0, sum: 0, min: 0, max: 0 } }, expected)).toBe(false);
    expect(aggregatesMatch({ ...expected, extra: { count: 1, sum: 1, min: 1, max: 1 } }, expected)).toBe(false);
    expect(aggregatesMatch(undefined, expected)).toBe(false);
  });
});

describe("the local runner's instance settings (instanceEnv)", () => {
  const connection = "UseDevelopmentStorage=true";

  it("the default 5 s schedule starts: without STEP_BUDGET_MS the budget is set below the tick", () => {
    const { env, settings } = instanceEnv({}, connection, "*/5 * * * * *");
    expect(settings.STEP_BUDGET_MS).toBe(4000);
    expect(env.STEP_BUDGET_MS).toBe("4000");
    // A slow schedule keeps the app's default.
    expect(instanceEnv({}, connection, "0 * * * * *").settings.STEP_BUDGET_MS).toBe(20_000);
  });

  it("a STEP_BUDGET_MS given is kept, and refused with its reason when it does not fit the schedule", () => {
    expect(instanceEnv({ STEP_BUDGET_MS: "3000" }, connection, "*/5 * * * * *").settings.STEP_BUDGET_MS).toBe(3000);
    expect(() => instanceEnv({ STEP_BUDGET_MS: "20000" }, connection, "*/5 * * * * *")).toThrow(
      /STEP_BUDGET_MS \(20000\) must be below the shortest interval of COORDINATOR_SCHEDULE/,
    );
  });
});
