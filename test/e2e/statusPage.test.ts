import { existsSync, mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { InstanceProcess, lastOutput, type InstanceState } from "../../dev/src/local/instances";
import { createRepoApp } from "../../scripts/support/repoKinds";
import { getJobStatus, runCoordinatorTick, submitJob } from "../../src/app/operations";
import type { JobStatus } from "../../src/coordination/jobs/status";
import { recordTerm } from "../../src/coordination/state/termHistory";
import { readSettings } from "../../src/app/settings";
import { FencedStateStore } from "../../src/library/fencing/FencedStateStore";
import type { LeaderInfo } from "../../src/library/leadership/leaderInfo";
import { useAzurite } from "../support/azuriteFixture";
import { drainWorkQueue, newTestApp, runUntilComplete, testAppSettings } from "../support/inProcessApp";
import { REPO_APP } from "../../scripts/support/repoApp";

/**
 * The status page in a real headless Chromium (Debian's `chromium`, driven by playwright-core; no browser download),
 * served by the local host in its own OS process, over state made by real ticks on Azurite. Without Chromium the test
 * is skipped with a printed reason, except under CI, where it must run.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const IN_CI = (process.env.CI ?? "") !== "" && process.env.CI !== "false";
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const SCREENSHOT = resolve(__dirname, "..", "..", "bench-results", "status-page.png");
if (!HAVE_CHROMIUM && !IN_CI) {
  process.stderr.write(
    `Skipping the status page browser test: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH). With CI set it runs and fails instead.\n`,
  );
}

const params = { format: "csv", keyField: "region", valueField: "amount" } as const;
const noopSink = {
  logger: { verbose: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  emit: () => undefined,
};

describe.skipIf(!HAVE_CHROMIUM && !IN_CI)("status page in headless Chromium (local host process, Azurite)", () => {
  const storage = useAzurite();
  let settings: Record<string, string>;
  let instance: InstanceProcess | undefined;
  let baseUrl = "";
  let browser: Browser | undefined;
  const stopHolding = new AbortController();
  let holding: Promise<unknown> | undefined;
  const jobIds: { ended: string; running: string } = { ended: "", running: "" };

  beforeAll(async () => {
    if (!HAVE_CHROMIUM)
      throw new Error(
        `CI is set, so the browser test must run, but there is no Chromium at ${CHROMIUM}: .ci/run installs Debian's chromium with apt-get.`,
      );
    // Small dispatch batches of one-item units, so one job is still mid-way when the page is read.
    settings = {
      ...testAppSettings(storage.azurite.connectionString),
      DISPATCH_BATCH_SIZE: "2",
      WORK_UNIT_MAX_ITEMS: "1",
    };
    const first = newTestApp(storage.azurite.connectionString, { ...settings, WEBSITE_INSTANCE_ID: "status-first" });
    const second = createRepoApp({ ...settings, WEBSITE_INSTANCE_ID: "status-second" });

    // A job that ended: two good items, one with a value that is not a number (a failed item with its reason).
    const ended = await submitJob(first.app, {
      kind: "group-by",
      params,
      items: [
        { inline: "region,amount\neu,2" },
        { inline: "region,amount\nus,abc" },
        { inline: "region,amount\neu,5" },
      ],
    });
    if (!ended.ok) throw new Error("the ended job was refused");
    jobIds.ended = ended.id;
    await runUntilComplete(
      first.app,
      first.sink,
      async () => (await getJobStatus(first.app, ended.id))?.status === "completed",
    );

    // A job mid-way: ten items, at most four in flight; one tick by each instance with the workers run in between.
    const running = await submitJob(first.app, {
      kind: "group-by",
      params,
      items: Array.from({ length: 10 }, (_, i) => ({ inline: `region,amount\nr${i % 3},${i}` })),
    });
    if (!running.ok) throw new Error("the running job was refused");
    jobIds.running = running.id;
    await runCoordinatorTick(second, noopSink);
    await drainWorkQueue(second, noopSink);
    await runCoordinatorTick(first.app, first.sink);

    // Messages the host gave up on, and a third instance that holds the lease while the page is read (and records
    // its term first, as every step does).
    await first.app.workPoisonQueue.send(["poisoned one", "poisoned two"]);
    const holder = createRepoApp({ ...settings, WEBSITE_INSTANCE_ID: "status-holder" });
    let held: () => void = () => undefined;
    const isHeld = new Promise<void>((resolve) => (held = resolve));
    holding = holder.elector.tryLead(
      async (term) => {
        await recordTerm(new FencedStateStore(holder.state, term), term, noopSink.logger, { abortSignal: term.signal });
        held();
        await new Promise((resolve) => stopHolding.signal.addEventListener("abort", resolve));
      },
      { abortSignal: stopHolding.signal },
    );
    await isHeld;

    // The local host in its own process, serving only the HTTP routes (the timer and the queue triggers are disabled
    // so nothing changes while the page and the JSON API are compared).
    const env: Record<string, string | undefined> = {
      ...process.env,
      ...settings,
      "AzureWebJobs.coordinator.Disabled": "true",
      "AzureWebJobs.worker.Disabled": "true",
      "AzureWebJobs.wake.Disabled": "true",
    };
    for (const [name, value] of Object.entries(readSettings(env)))
      if ((env[name] ?? "") === "") env[name] = String(value);
    const ready = new Promise<number>((resolve, reject) => {
      instance = new InstanceProcess(
        "status-page",
        { ...REPO_APP, ...env },
        {
          onEvent: () => undefined,
          onLog: () => undefined,
          onReady: (_state, line) => {
            if (line.httpPort === undefined) reject(new Error("the instance serves no HTTP"));
            else resolve(line.httpPort);
          },
          onExit: (state: InstanceState) => {
            reject(new Error(`the instance exited before it was ready:\n${lastOutput(state)}`));
          },
        },
      );
    });
    baseUrl = `http://127.0.0.1:${await ready}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await instance?.stop(10_000);
    stopHolding.abort();
    await holding;
  });

  it("renders without console errors, shows the JSON API's leader and job numbers, refreshes itself, and is screenshotted", async () => {
    const leader = (await getJson(`${baseUrl}/api/leader`)) as LeaderInfo;
    const ended = (await getJson(`${baseUrl}/api/jobs/${jobIds.ended}`)) as JobStatus;
    const running = (await getJson(`${baseUrl}/api/jobs/${jobIds.running}`)) as JobStatus;
    expect(leader.holder).toMatch(/^status-holder-/);
    expect(ended).toMatchObject({ status: "completed", progress: { total: 3, done: 2, failed: 1 } });
    expect(running.status).toBe("running");
    expect(running.progress.done).toBeGreaterThan(0);
    expect(running.progress.done).toBeLessThan(10);

    const page = await (browser as Browser).newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(`console: ${message.text()}`);
    });
    page.on("pageerror", (error) => errors.push(`page: ${error.message}`));
    page.on("requestfailed", (request) =>
      errors.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ""}`),
    );
    const requested: string[] = [];
    page.on("request", (request) => requested.push(request.url()));

    const url = `${baseUrl}/api/status?code=local-test-key`;
    const response = await page.goto(url);
    expect(response?.status()).toBe(200);

    await expectPageMatches(page, leader, [ended, running]);
    const firstRendered = await page.getAttribute('[data-field="rendered-at"]', "datetime");

    // The page refreshes itself in place (same URL, so the key goes along) and still shows the same numbers.
    await page.waitForSelector('body:not([data-refreshes="0"])', { state: "attached", timeout: 20_000 });
    expect(await page.getAttribute('[data-field="rendered-at"]', "datetime")).not.toBe(firstRendered);
    expect(requested.filter((requestUrl) => requestUrl === url).length).toBeGreaterThanOrEqual(2);
    expect(requested.every((requestUrl) => requestUrl.startsWith(baseUrl))).toBe(true); // nothing external
    expect(await page.isHidden("#refresh-state")).toBe(true);
    await expectPageMatches(page, leader, [ended, running]);

    expect(errors).toEqual([]);

    mkdirSync(resolve(SCREENSHOT, ".."), { recursive: true });
    // caret "initial": hiding the caret would inject a style element, which the page's CSP rightly refuses.
    await page.screenshot({ path: SCREENSHOT, fullPage: true, caret: "initial" });
    expect(existsSync(SCREENSHOT)).toBe(true);
    expect(errors).toEqual([]);
  }, 90_000);
});

/** The page shows the leader, each job's numbers and the poison depth the API and the queue report. */
async function expectPageMatches(page: Page, leader: LeaderInfo, jobs: JobStatus[]): Promise<void> {
  expect(await page.getAttribute('[data-field="leader-holder"]', "data-holder")).toBe(leader.holder);
  expect(await page.textContent('[data-field="leader-epoch"]')).toBe(String(leader.epoch));
  expect(await page.getAttribute('[data-field="leader-since"]', "datetime")).toBe(leader.since);
  expect(await page.textContent('[data-field="leader-transitions"]')).toBe(String(leader.transitions));
  // The current term is on the timeline, in its holder's lane.
  expect(await page.textContent(`#terms tr[data-epoch="${leader.epoch}"]`)).toContain("leading now");
  for (const job of jobs) {
    const row = `tr[data-job="${job.id}"]`;
    const field = async (name: string): Promise<string | null> => page.textContent(`${row} [data-field="${name}"]`);
    expect(await field("status")).toBe(job.status);
    expect(await field("total")).toBe(String(job.progress.total));
    expect(await field("dispatched")).toBe(String(job.progress.dispatched));
    expect(await field("done")).toBe(String(job.progress.done));
    expect(await field("failed")).toBe(String(job.progress.failed));
    for (const failure of job.failures)
      expect(await page.textContent(`tr[data-reasons-of="${job.id}"]`)).toContain(failure.reason);
  }
  expect(await page.textContent('[data-field="failed-items"]')).toBe(
    String(jobs.reduce((sum, job) => sum + job.progress.failed, 0)),
  );
  const poisonDepths = await page.locator('tr[data-queue] [data-field="depth"]').allTextContents();
  expect(poisonDepths).toEqual(["2", "0"]);
}

async function getJson(url: string): Promise<unknown> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`GET ${url} answered ${response.status}`);
  return response.json();
}
