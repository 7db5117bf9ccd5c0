import { describe, expect, it } from "vitest";
import { ConfigurationError } from "../../src/library/errors";
import { APP_SETTING_NAMES, isAppBlobName, readSettings } from "../../src/app/settings";
import { keys } from "../../src/coordination/state/jobState";
import { TERMS_KEY } from "../../src/coordination/state/termHistory";
import { connectionFromSettings } from "../../src/azure/clients";

describe("settings", () => {
  it("applies the documented defaults", () => {
    expect(readSettings({})).toMatchObject({
      COORDINATOR_SCHEDULE: "0 * * * * *",
      LEASE_CONTAINER: "leases",
      LEASE_BLOB: "MyLeaderCoordinatorTask",
      LEASE_DURATION_SECONDS: 15,
      LEASE_RENEW_INTERVAL_MS: 3000,
      LEASE_RENEW_DEADLINE_MS: 10_000,
      WAKE_QUEUE: "coordinator-wake",
      MAX_INPUT_BLOB_BYTES: 4 * 1024 * 1024,
    });
  });

  it("refuses a MAX_INPUT_BLOB_BYTES below 1 KiB or above 256 MiB, naming it", () => {
    expect(readSettings({ MAX_INPUT_BLOB_BYTES: "268435456" }).MAX_INPUT_BLOB_BYTES).toBe(256 * 1024 * 1024);
    expect(() => readSettings({ MAX_INPUT_BLOB_BYTES: "268435457" })).toThrow(
      /MAX_INPUT_BLOB_BYTES="268435457" must be from 1024 to 268435456/,
    );
    expect(() => readSettings({ MAX_INPUT_BLOB_BYTES: "100" })).toThrow(/MAX_INPUT_BLOB_BYTES="100" must be from 1024/);
  });

  it("defaults MAX_JOB_DOCUMENT_BYTES to 16 MiB and refuses one below 1 MiB or above 64 MiB, naming it (issue 21)", () => {
    expect(readSettings({}).MAX_JOB_DOCUMENT_BYTES).toBe(16 * 1024 * 1024);
    expect(readSettings({ MAX_JOB_DOCUMENT_BYTES: "67108864" }).MAX_JOB_DOCUMENT_BYTES).toBe(64 * 1024 * 1024);
    expect(() => readSettings({ MAX_JOB_DOCUMENT_BYTES: "67108865" })).toThrow(
      /MAX_JOB_DOCUMENT_BYTES="67108865" must be from 1048576 to 67108864/,
    );
    expect(() => readSettings({ MAX_JOB_DOCUMENT_BYTES: "1000" })).toThrow(
      /MAX_JOB_DOCUMENT_BYTES="1000" must be from/,
    );
  });

  it("names every bad setting, its value and what is allowed", () => {
    const read = (): unknown =>
      readSettings({ LEASE_DURATION_SECONDS: "90", WORK_QUEUE: "Bad_Name", COORDINATOR_SCHEDULE: "* * *" });
    expect(read).toThrow(ConfigurationError);
    expect(read).toThrow(/LEASE_DURATION_SECONDS="90" must be from 15 to 60/);
    expect(read).toThrow(/WORK_QUEUE="Bad_Name" must be 3–63 lowercase letters/);
    expect(read).toThrow(/COORDINATOR_SCHEDULE="\* \* \*" must be an NCRONTAB expression with six fields/);
  });

  it("enforces renew interval < renew deadline ≤ 90 % of the lease duration with the library's rule, naming the settings", () => {
    const tooLate = (ms: number, leaseMs: number) =>
      `LEASE_RENEW_DEADLINE_MS (${ms}) must be at most ${leaseMs * 0.9} ms: LEASE_DURATION_SECONDS × 1000 (${leaseMs} ms) less 10 %, so a leader whose clock runs 10 % slow stops before its lease can expire`;
    expect(() => readSettings({ LEASE_RENEW_DEADLINE_MS: "15000" })).toThrow(
      `Invalid app settings: ${tooLate(15_000, 15_000)}.`,
    );
    expect(() => readSettings({ LEASE_RENEW_DEADLINE_MS: "13501" })).toThrow(
      `Invalid app settings: ${tooLate(13_501, 15_000)}.`,
    );
    expect(readSettings({ LEASE_RENEW_DEADLINE_MS: "13500" }).LEASE_RENEW_DEADLINE_MS).toBe(13_500);
    expect(() => readSettings({ LEASE_DURATION_SECONDS: "60", LEASE_RENEW_DEADLINE_MS: "59000" })).toThrow(
      /LEASE_RENEW_DEADLINE_MS="59000" must be from 1000 to 54000/,
    );
    expect(() => readSettings({ LEASE_RENEW_INTERVAL_MS: "10000" })).toThrow(
      "Invalid app settings: LEASE_RENEW_INTERVAL_MS (10000) must be below LEASE_RENEW_DEADLINE_MS (10000).",
    );
    expect(() => readSettings({ LEASE_RENEW_INTERVAL_MS: "20000", LEASE_RENEW_DEADLINE_MS: "20000" })).toThrow(
      `Invalid app settings: LEASE_RENEW_INTERVAL_MS (20000) must be below LEASE_RENEW_DEADLINE_MS (20000); ${tooLate(20_000, 15_000)}.`,
    );
  });

  it("refuses a LEASE_BLOB with a dot segment: it would name a blob in another container", () => {
    expect(() => readSettings({ LEASE_BLOB: "../coordinator-state/index.json" })).toThrow(
      'Invalid app settings: LEASE_BLOB="../coordinator-state/index.json" must name a blob in its container: blob names may not contain "." or ".." segments',
    );
    expect(() => readSettings({ LEASE_BLOB: "leases\\..\\x" })).toThrow(ConfigurationError);
  });

  it("refuses a WORK_QUEUE or RESULTS_QUEUE longer than 56 characters: its <name>-poison queue would not be a valid queue name", () => {
    const long = `w${"x".repeat(55)}1`; // 57 characters: a valid queue name, but not with "-poison"
    expect(() => readSettings({ WORK_QUEUE: long })).toThrow(ConfigurationError);
    expect(() => readSettings({ WORK_QUEUE: long })).toThrow(
      `WORK_QUEUE="${long}" is 57 characters: failed messages go to "${long}-poison", 64 characters, and a queue name may have at most 63; use at most 56 characters`,
    );
    expect(() => readSettings({ RESULTS_QUEUE: `r${"x".repeat(61)}1` })).toThrow(/RESULTS_QUEUE=".*" is 63 characters/);
    const longest = `w${"x".repeat(54)}1`;
    expect(readSettings({ WORK_QUEUE: longest, RESULTS_QUEUE: `r${longest.slice(1)}` }).WORK_QUEUE).toBe(longest);
  });

  it.each([
    ["SYSTEM_CONTAINER", { SYSTEM_CONTAINER: "job-inputs" }],
    ["STATE_CONTAINER", { STATE_CONTAINER: "job-inputs" }],
    ["LEASE_CONTAINER", { LEASE_CONTAINER: "job-inputs" }],
    ["SYSTEM_CONTAINER", { INPUT_CONTAINER: "coordinator-system" }],
  ])("refuses %s naming the input container, which is the user's and only read", (setting, env) => {
    const value = Object.values(env)[0] ?? "";
    expect(() => readSettings(env)).toThrow(
      `${setting}="${value}" is also INPUT_CONTAINER: the input container is the user's, which the app only reads, and the app writes and deletes blobs in ${setting}; LEASE_CONTAINER, STATE_CONTAINER and SYSTEM_CONTAINER must each name another container`,
    );
  });

  it.each([
    [{ WAKE_QUEUE: "work-results" }, 'WAKE_QUEUE="work-results" is also RESULTS_QUEUE'],
    [{ WAKE_QUEUE: "work-items" }, 'WAKE_QUEUE="work-items" is also WORK_QUEUE'],
    [{ RESULTS_QUEUE: "work-items" }, 'RESULTS_QUEUE="work-items" is also WORK_QUEUE'],
    [
      { RESULTS_QUEUE: "work-items-poison" },
      'RESULTS_QUEUE="work-items-poison" is also the poison queue of WORK_QUEUE',
    ],
    [
      { WORK_QUEUE: "work-results-poison" },
      'WORK_QUEUE="work-results-poison" is also the poison queue of RESULTS_QUEUE',
    ],
    [{ WAKE_QUEUE: "work-items-poison" }, 'WAKE_QUEUE="work-items-poison" is also the poison queue of WORK_QUEUE'],
    [
      { WAKE_QUEUE: "work-results-poison" },
      'WAKE_QUEUE="work-results-poison" is also the poison queue of RESULTS_QUEUE',
    ],
  ])("refuses queues that one function would share with another: %o", (env, problem) => {
    expect(() => readSettings(env)).toThrow(
      `${problem}: WORK_QUEUE, RESULTS_QUEUE and WAKE_QUEUE each need a queue of their own, and none may be another's <name>-poison queue (one would take the other's messages)`,
    );
  });

  const STATE_NAMES = "index.json, terms.json, jobs/…";
  const SYSTEM_NAMES = "jobs/…, inbox/…, cancel/…, ended/…";
  it.each([
    ["coordinator-state", "index.json", "STATE_CONTAINER", STATE_NAMES],
    ["coordinator-state", "jobs/leader", "STATE_CONTAINER", STATE_NAMES],
    ["coordinator-system", "inbox/leader", "SYSTEM_CONTAINER", SYSTEM_NAMES],
    ["coordinator-system", "cancel/leader", "SYSTEM_CONTAINER", SYSTEM_NAMES],
    ["coordinator-system", "ended/leader", "SYSTEM_CONTAINER", SYSTEM_NAMES],
  ])("refuses a lease blob among the app's own blobs: %s/%s", (container, blob, shared, names) => {
    expect(() => readSettings({ LEASE_CONTAINER: container, LEASE_BLOB: blob })).toThrow(
      `LEASE_BLOB="${blob}" in LEASE_CONTAINER="${container}", which is also ${shared}, where the app writes and deletes ${names}: name the lease blob outside those (as the default "MyLeaderCoordinatorTask" is), or give LEASE_CONTAINER a container of its own`,
    );
  });

  it("accepts containers shared where nothing collides: the lease beside the state or the system blobs, the state beside the system blobs", () => {
    expect(() => readSettings({ LEASE_CONTAINER: "coordinator-state" })).not.toThrow();
    expect(() => readSettings({ LEASE_CONTAINER: "coordinator-system" })).not.toThrow();
    expect(() => readSettings({ STATE_CONTAINER: "coordinator-system" })).not.toThrow();
  });

  it("knows every blob name the app uses in the state and the system container (the lease blob must stay clear of them)", () => {
    for (const blob of [keys.index, TERMS_KEY, keys.jobState("j")])
      expect(isAppBlobName("STATE_CONTAINER", blob), blob).toBe(true);
    const system = [keys.spec("j"), keys.chunk("j", 0), keys.partial("j", 0), keys.outcome("j", 0)];
    for (const blob of [...system, keys.inbox("j"), keys.cancel("j"), keys.ended("j", 1)])
      expect(isAppBlobName("SYSTEM_CONTAINER", blob), blob).toBe(true);
    expect(isAppBlobName("SYSTEM_CONTAINER", "MyLeaderCoordinatorTask")).toBe(false);
  });

  it("names every cross-setting problem at once", () => {
    expect(() =>
      readSettings({ SYSTEM_CONTAINER: "job-inputs", RESULTS_QUEUE: "work-items", WAKE_QUEUE: "work-items" }),
    ).toThrow(
      /^Invalid app settings: SYSTEM_CONTAINER="job-inputs" is also INPUT_CONTAINER: .*; RESULTS_QUEUE="work-items" is also WORK_QUEUE: .*; WAKE_QUEUE="work-items" is also WORK_QUEUE: .*; WAKE_QUEUE="work-items" is also RESULTS_QUEUE: .*\.$/,
    );
  });

  it("lists the identity connection settings among the app's setting names", () => {
    expect(APP_SETTING_NAMES).toContain("COORDINATION_STORAGE__blobServiceUri");
    expect(APP_SETTING_NAMES).toContain("LEASE_BLOB");
  });

  it("resolves a connection from a connection string or from service URIs, and explains what is missing", () => {
    expect(connectionFromSettings("X", { X: "UseDevelopmentStorage=true" })).toEqual({
      kind: "connectionString",
      connectionString: "UseDevelopmentStorage=true",
    });
    const identity = connectionFromSettings("X", {
      X__blobServiceUri: "https://a.blob.core.windows.net",
      X__queueServiceUri: "https://a.queue.core.windows.net",
      X__clientId: "id",
    });
    expect(identity.kind).toBe("identity");
    expect(() => connectionFromSettings("X", {})).toThrow(
      /set X to a connection string \(local\/Azurite only\), or X__blobServiceUri and X__queueServiceUri/,
    );
  });
});

describe("COORDINATOR_SCHEDULE is read as the Functions host reads it (NCRONTAB, six fields, seconds first)", () => {
  it.each([
    ["a b c d e f", /COORDINATOR_SCHEDULE="a b c d e f" .*field 1 \(second\) "a"/],
    ["0 99 * * * *", /COORDINATOR_SCHEDULE="0 99 \* \* \* \*" .*field 2 \(minute\) "99": 99 is outside 0–59/],
    ["0 0 25 * * *", /field 3 \(hour\) "25": 25 is outside 0–23/],
    ["0 0 0 * * 7", /field 6 \(day of week\) "7": 7 is outside 0–6 \(Sunday is 0\)/],
    ["0 0 0 L * *", /field 4 \(day of month\) "L": .*NCRONTAB allows \*, numbers, names/],
    ["0 0 0 ? * MON", /field 4 \(day of month\) "\?"/],
    ["0 0 0 * * 1#2", /field 6 \(day of week\) "1#2"/],
    ["H * * * * *", /field 1 \(second\) "H": names are allowed only for months and days of the week/],
    ["0 0 0 * * Funday", /field 6 \(day of week\) "Funday" is not the start of a day's name/],
    ["0 0 0 30 2 *", /is not a schedule the host can run: Invalid explicit day of month/],
    ["0 0 0 29 2 Mon", /fires at most once in eight years/],
    ["@daily", /must be an NCRONTAB expression with six fields/],
    ["0 */5 * * *", /must be an NCRONTAB expression with six fields, seconds first.*got 5/],
    ["00:05:00", /a TimeSpan.*App Service plan/],
    ["%MY_SCHEDULE%", /app setting reference.*resolved only in a function's own schedule/],
  ])("refuses %j, naming the setting and why", (schedule, why) => {
    expect(() => readSettings({ COORDINATOR_SCHEDULE: schedule })).toThrow(ConfigurationError);
    expect(() => readSettings({ COORDINATOR_SCHEDULE: schedule })).toThrow(why);
  });

  it.each([
    ["0 */5 * * * *"],
    ["*/30 * * * * *"],
    ["0 0 9 * * Mon-Fri"],
    ["0 30 9 * Jan,Jul Monday"],
    ["5/15 * * * * *"],
    ["0 0 0 1,15 * *"],
    ["  0   0 * * * *  "],
  ])("accepts %j, a form the host accepts", (schedule) => {
    const settings = readSettings({ COORDINATOR_SCHEDULE: schedule, STEP_BUDGET_MS: "1000" });
    expect(settings.COORDINATOR_SCHEDULE).toBe(schedule.trim());
  });

  it("refuses a STEP_BUDGET_MS that is not below the schedule's shortest interval, naming both", () => {
    expect(() => readSettings({ COORDINATOR_SCHEDULE: "*/5 * * * * *", STEP_BUDGET_MS: "600000" })).toThrow(
      'Invalid app settings: STEP_BUDGET_MS (600000) must be below the shortest interval of COORDINATOR_SCHEDULE ("*/5 * * * * *" fires 5000 ms apart at its closest): a step must end before the next tick starts one.',
    );
    expect(() => readSettings({ COORDINATOR_SCHEDULE: "*/5 * * * * *", STEP_BUDGET_MS: "5000" })).toThrow(
      /STEP_BUDGET_MS \(5000\) must be below/,
    );
    expect(readSettings({ COORDINATOR_SCHEDULE: "*/5 * * * * *", STEP_BUDGET_MS: "4999" }).STEP_BUDGET_MS).toBe(4999);
  });

  it("takes the shortest interval, not the first one: minutes 0 and 1 of each hour are 60 s apart", () => {
    expect(() => readSettings({ COORDINATOR_SCHEDULE: "0 0,1 * * * *", STEP_BUDGET_MS: "90000" })).toThrow(
      /fires 60000 ms apart at its closest/,
    );
    // Day of month AND day of week, as NCRONTAB reads them: Fridays the 13th are months apart, not days.
    expect(
      readSettings({ COORDINATOR_SCHEDULE: "0 0 0 13 * Fri", STEP_BUDGET_MS: "600000" }).COORDINATOR_SCHEDULE,
    ).toBe("0 0 0 13 * Fri");
  });
});
