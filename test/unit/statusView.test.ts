import { JobStopChecks } from "../../src/coordination/state/jobStops";
import { describe, expect, it } from "vitest";
import { createRegistry } from "../../scripts/support/repoKinds";
import { renderStatusPage, statusPageHeaders } from "../../src/app/renderStatusPage";
import {
  MAX_REASONS_SHOWN,
  STATUS_REFRESH_MS,
  buildStatusView,
  formatDuration,
  lineFromStatus,
  readStatusView,
  type JobLine,
  type StatusSnapshot,
  type StatusSources,
} from "../../src/app/statusView";
import type { CoordinationDeps } from "../../src/coordination/deps";
import { keys } from "../../src/coordination/state/jobState";
import { poolViews } from "../../src/coordination/state/grantLedger";
import type { JobStatus } from "../../src/coordination/jobs/status";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import type { LeaderInfo } from "../../src/library/leadership/leaderInfo";
import { silentLogger } from "../../src/library/util/logger";
import { FakeLeaseStore } from "../support/FakeLeaseStore";
import { MemoryStateStore } from "../support/MemoryStateStore";
import { MemoryFiles, MemoryQueue, fakeTerm } from "../support/memoryPorts";

const T0 = Date.parse("2026-05-01T12:00:00.000Z");

/** A job's line as the page lists it, from a status like GET /api/jobs/{id}'s. */
function job(overrides: Partial<JobStatus> & { id: string }): JobLine {
  return lineFromStatus({
    kind: "group-by",
    status: "running",
    progress: { total: 10, dispatched: 8, done: 4, failed: 1, skipped: 0 },
    aggregate: undefined,
    failures: [{ item: 3, reason: "value is not a number" }],
    createdAt: new Date(T0).toISOString(),
    completedAt: undefined,
    lastEpoch: 7,
    ...overrides,
  });
}

function leader(overrides: Partial<LeaderInfo> = {}): LeaderInfo {
  return {
    holder: "b-2",
    epoch: 7,
    since: new Date(T0 + 60_000).toISOString(),
    transitions: 7,
    leaseState: "leased",
    revokedEpoch: undefined,
    revocationHonoured: false,
    ...overrides,
  };
}

function snapshot(overrides: Partial<StatusSnapshot> = {}): StatusSnapshot {
  return {
    nowMs: T0 + 100_000,
    leader: leader(),
    terms: [
      { holder: "a-1", epoch: 5, sinceMs: T0 },
      { holder: "b-2", epoch: 6, sinceMs: T0 + 20_000 },
      { holder: "b-2", epoch: 7, sinceMs: T0 + 60_000 },
    ],
    jobs: { active: [job({ id: "j1" })], moreActive: 0, pending: [], recent: [] },
    poison: [
      { queue: "work-items-poison", depth: 2 },
      { queue: "work-results-poison", depth: 0 },
    ],
    problems: [],
    ...overrides,
  };
}

describe("status view model (src/app/statusView.ts)", () => {
  it("shows who leads, since when and how long ago, and marks that term current on the timeline", () => {
    const view = buildStatusView(snapshot());
    expect(view.renderedAt).toBe("2026-05-01T12:01:40.000Z");
    expect(view.refreshMs).toBe(STATUS_REFRESH_MS);
    expect(view.leader).toEqual({
      holder: "b-2",
      epoch: 7,
      since: "2026-05-01T12:01:00.000Z",
      sinceAgo: "40 s",
      transitions: 7,
      leaseState: "leased",
      revocation: undefined,
    });
    expect(view.timeline.holders).toEqual(["a-1", "b-2"]);
    expect(view.timeline.start).toBe("2026-05-01T12:00:00.000Z");
    expect(view.timeline.terms.map((t) => [t.epoch, t.holderIndex, t.position, t.current, t.sinceAgo])).toEqual([
      [5, 0, 0, false, "1 min 40 s"],
      [6, 1, 0.2, false, "1 min 20 s"],
      [7, 1, 0.6, true, "40 s"],
    ]);
  });

  it("between ticks nobody holds the lease: no holder, no current term, the last epoch still shown", () => {
    const view = buildStatusView(
      snapshot({
        leader: leader({ holder: undefined, leaseState: "available", revokedEpoch: 6, revocationHonoured: true }),
      }),
    );
    expect(view.leader).toMatchObject({ holder: undefined, epoch: 7, revocation: { epoch: 6, honoured: true } });
    expect(view.timeline.terms.some((t) => t.current)).toBe(false);
  });

  it("computes progress shares, age, and failure reasons per job, most frequent first and bounded", () => {
    const reasons = [
      "bad csv",
      "not a number",
      "not a number",
      "missing blob",
      "a",
      "b",
      "c",
      "not a number",
      "bad csv",
    ];
    const view = buildStatusView(
      snapshot({
        jobs: {
          active: [job({ id: "j1", progress: { total: 3, dispatched: 3, done: 1, failed: 1, skipped: 0 } })],
          moreActive: 4,
          pending: [
            job({
              id: "p1",
              status: "pending",
              progress: { total: 5, dispatched: 0, done: 0, failed: 0, skipped: 0 },
              failures: [],
              lastEpoch: undefined,
            }),
          ],
          recent: [
            job({
              id: "r1",
              status: "completed",
              progress: { total: 400, dispatched: 400, done: 380, failed: 20, skipped: 0 },
              failures: reasons.map((reason, item) => ({ item, reason })),
              completedAt: new Date(T0 + 3_723_000).toISOString(),
            }),
          ],
        },
      }),
    );
    expect(view.jobs.active[0]).toMatchObject({
      id: "j1",
      total: 3,
      done: 1,
      failed: 1,
      percent: { done: 33.3, failed: 33.3, dispatched: 100 },
      age: "1 min 40 s",
      lastEpoch: 7,
    });
    expect(view.jobs.pending[0]).toMatchObject({
      status: "pending",
      percent: { done: 0, failed: 0, dispatched: 0 },
      reasons: [],
      unrecordedFailures: 0,
    });
    expect(view.jobs.moreActive).toBe(4);
    const recent = view.jobs.recent[0];
    expect(recent).toMatchObject({
      status: "completed",
      percent: { done: 95, failed: 5 },
      age: "1 h 2 min",
      unrecordedFailures: 11,
    });
    expect(recent?.reasons).toHaveLength(MAX_REASONS_SHOWN);
    expect(recent?.reasons.slice(0, 2)).toEqual([
      { reason: "not a number", count: 3 },
      { reason: "bad csv", count: 2 },
    ]);
    // Totals over the jobs listed (pending ones have none): 1 failed item in j1, 20 in r1.
    expect(view.failures).toMatchObject({ items: 21, jobsWithFailures: 2 });
    expect(view.failures.reasons[0]).toEqual({ reason: "not a number", count: 3 });
  });

  it("a cancelled job's age stops when it ended, not now", () => {
    const cancelled = job({
      id: "c1",
      status: "cancelled",
      progress: { total: 10, dispatched: 4, done: 4, failed: 0, skipped: 6 },
      failures: [],
      endedAt: new Date(T0 + 30_000).toISOString(),
    });
    const view = buildStatusView(snapshot({ jobs: { active: [], moreActive: 0, pending: [], recent: [cancelled] } }));
    expect(view.jobs.recent[0]).toMatchObject({ status: "cancelled", done: 4, age: "30 s" });
  });

  it("a job of zero items shows 0 %, not NaN", () => {
    const view = buildStatusView(
      snapshot({
        jobs: {
          active: [
            job({ id: "z", progress: { total: 0, dispatched: 0, done: 0, failed: 0, skipped: 0 }, failures: [] }),
          ],
          moreActive: 0,
          pending: [],
          recent: [],
        },
      }),
    );
    expect(view.jobs.active[0]?.percent).toEqual({ done: 0, failed: 0, dispatched: 0 });
  });

  it("shows each limited pool: items running against its limit, rate permits in use, starts reported, items waiting (issue 42)", () => {
    const nowMs = T0 + 100_000; // the snapshot's
    const grant = (id: string, pool: string, c: number, r: number, ended?: { atMs: number; starts: number }) => ({
      id,
      jobId: "j",
      first: 0,
      count: 10,
      grantedAtMs: nowMs - 2000,
      expiresAtMs: nowMs + 600_000,
      holds: [{ pool, c, r, windowMs: 1000 }],
      ...(ended === undefined ? {} : { endedAtMs: ended.atMs, lastStartMs: ended.atMs, starts: ended.starts }),
    });
    const ledger = {
      v: 1 as const,
      grants: [grant("g1", "k:geo", 3, 4), grant("g2", "k:geo", 2, 2, { atMs: nowMs - 500, starts: 7 })],
      waiting: { "k:geo": { atMs: nowMs - 1000, items: 900 } },
      limits: { "k:geo": { concurrency: 3, rate: { limit: 10, periodMs: 1000, permits: 10, windowMs: 1000 } } },
    };
    const view = buildStatusView(snapshot({ limits: poolViews(ledger, nowMs) }));
    expect(view.limits).toEqual([
      {
        pool: "k:geo",
        concurrency: { limit: 3, running: 3 },
        rate: { limit: 10, periodSeconds: 1, burst: 10, permitsInUse: 6, reportedStarts: 7 },
        waitingItems: 900,
      },
    ]);
    const page = renderStatusPage(view, { nonce: "n" });
    expect(page).toContain('data-pool="k:geo"');
    expect(page).toMatch(/data-field="running">3 of 3</);
    expect(page).toMatch(/data-field="waiting">900</);
    // Without limited pools there is no section at all.
    expect(renderStatusPage(buildStatusView(snapshot()), { nonce: "n" })).not.toContain('id="limits"');
  });

  it.each([
    [-5, "0 ms"],
    [850.4, "850 ms"],
    [12_999, "12 s"],
    [60_000, "1 min"],
    [184_000, "3 min 4 s"],
    [7_500_000, "2 h 5 min"],
    [273_600_000, "3 d 4 h"],
    [Number.NaN, "0 ms"],
  ])("formatDuration(%s) is %s", (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});

describe("reading the status view from the ports (in-memory)", () => {
  function world() {
    const state = new MemoryStateStore();
    const files = new MemoryFiles();
    const work = new MemoryQueue("work");
    const results = new MemoryQueue("results");
    const workPoison = new MemoryQueue("work-poison");
    const resultsPoison = new MemoryQueue("results-poison");
    const leaseStore = new FakeLeaseStore(() => T0);
    const deps: CoordinationDeps = {
      state,
      system: files,
      inputs: new MemoryFiles(),
      workQueue: work,
      resultsQueue: results,
      workPoisonQueue: workPoison,
      resultsPoisonQueue: resultsPoison,
      registry: createRegistry(),
      dispatchBatchSize: 2,
      maxInFlight: 2,
      maxAggregateGroups: 200_000,
      maxJobDocumentBytes: 16 * 1024 * 1024,
      jobRetentionMs: 7 * 24 * 3_600_000,
      maxInputBlobBytes: 1024 * 1024,
      workUnitConcurrency: 1,
      maxItemHoldMs: 0,
      jobStops: new JobStopChecks(files),
      workUnitMaxItems: 1,
      workUnitMaxBytes: 45 * 1024,
      workUnitMaxBlobItems: 32,
      workUnitSpread: 16,
      logger: silentLogger,
      emit: () => undefined,
      instanceId: "unit",
      now: () => T0,
    };
    const sources: StatusSources = {
      leaseStore,
      state,
      system: files,
      registry: deps.registry,
      workPoisonQueue: workPoison,
      resultsPoisonQueue: resultsPoison,
    };
    return { deps, sources, work, workPoison, leaseStore, state };
  }
  const ONE_PASS = { budgetMs: 60_000, maxPasses: 1 };
  const params = { format: "ndjson", keyField: "k", valueField: "v" } as const;

  async function runWorkers(deps: CoordinationDeps, queue: MemoryQueue): Promise<void> {
    for (const message of await queue.receive(1000, 60)) {
      await processWorkMessage(deps, JSON.parse(message.text ?? "null") as unknown, {
        id: message.id,
        dequeueCount: 1,
        maxDequeueCount: 5,
      });
      await queue.delete(message);
    }
  }

  it("lists running, submitted and recently ended jobs, the recorded terms, the leader and the poison depths", async () => {
    const { deps, sources, work, workPoison, leaseStore } = world();
    const ended = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [{ inline: '{"k":"a","v":1}' }, { inline: "not json" }],
    });
    const term1 = { ...fakeTerm(1, "a-1"), startedAtMs: T0 - 50_000 };
    await runCoordinationStep(deps, term1, ONE_PASS);
    await runWorkers(deps, work);
    await runCoordinationStep(deps, term1, ONE_PASS); // ended: 1 done, 1 failed
    const running = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      // 20: what is left past the window (18 units) is more than a spread (16), so it waits for results.
      items: Array.from({ length: 20 }, (_, v) => ({ inline: JSON.stringify({ k: "b", v }) })),
    });
    const term2 = { ...fakeTerm(2, "b-2"), startedAtMs: T0 - 10_000 };
    await runCoordinationStep(deps, term2, ONE_PASS); // registers, dispatches 2
    const submitted = await storeSubmission(deps.system, {
      kind: "group-by",
      params,
      items: [{ inline: '{"k":"c","v":1}' }],
    });
    await workPoison.send(["x", "y", "z"]);
    leaseStore.record = { holder: "b-2", epoch: 2, sinceMs: T0 - 10_000, transitions: 2 };
    leaseStore.leaseId = "lease";
    leaseStore.expiresAtMs = T0 + 15_000;

    const view = await readStatusView(sources, { nowMs: T0 });
    expect(view.problems).toEqual([]);
    expect(view.leader).toMatchObject({ holder: "b-2", epoch: 2, sinceAgo: "10 s", leaseState: "leased" });
    expect(view.timeline.terms.map((t) => [t.holder, t.epoch, t.current])).toEqual([
      ["a-1", 1, false],
      ["b-2", 2, true],
    ]);
    expect(view.jobs.active.map((j) => [j.id, j.status, j.total, j.dispatched, j.done])).toEqual([
      [running.id, "running", 20, 2, 0],
    ]);
    expect(view.jobs.pending.map((j) => [j.id, j.status, j.total])).toEqual([[submitted.id, "pending", 1]]);
    expect(view.jobs.recent.map((j) => [j.id, j.status, j.done, j.failed])).toEqual([[ended.id, "completed", 1, 1]]);
    expect(view.jobs.recent[0]?.reasons[0]?.reason).toMatch(/JSON/i);
    expect(view.failures).toMatchObject({ items: 1, jobsWithFailures: 1 });
    expect(view.poison).toEqual([
      { queue: "work-poison", depth: 3 },
      { queue: "results-poison", depth: 0 },
    ]);
  });

  it("shows what it can when a part cannot be read, naming the part and why", async () => {
    const { sources, state, leaseStore } = world();
    await state.write(keys.index, { something: "else" }, 1, { ifNoneMatch: "*" });
    leaseStore.mode = "down";
    const broken: StatusSources = {
      ...sources,
      resultsPoisonQueue: Object.assign(new MemoryQueue("results-poison"), {
        approximateCount: () => Promise.reject(new Error("queue service unavailable")),
      }),
    };
    const view = await readStatusView(broken, { nowMs: T0 });
    expect(view.leader).toBeUndefined();
    expect(view.poison).toEqual([
      { queue: "work-poison", depth: 0 },
      { queue: "results-poison", depth: Number.NaN },
    ]);
    expect(view.problems).toHaveLength(3);
    expect(view.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^leader: .*ECONNREFUSED/),
        expect.stringMatching(/^jobs: /),
        "poison queue results-poison: queue service unavailable",
      ]),
    );
    const page = renderStatusPage(view, { nonce: "n" });
    expect(page).toContain("Unknown: the lease could not be read.");
    expect(page).toMatch(/<td class="num" data-field="depth">unknown<\/td>/);
  });

  it("a job it cannot read is named among the problems with why; the other jobs still show", async () => {
    const { deps, sources, state } = world();
    const running = await storeSubmission(deps.system, { kind: "group-by", params, items: [{ inline: "{}" }] });
    const damaged = await storeSubmission(deps.system, { kind: "group-by", params, items: [{ inline: "{}" }] });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS); // both registered: active
    const stored = await state.read(keys.jobState(damaged.id));
    await state.write(keys.jobState(damaged.id), { v: 1, id: damaged.id }, 1, { ifMatch: stored?.etag ?? "" });
    const pending = await storeSubmission(deps.system, { kind: "group-by", params, items: [{ inline: "{}" }] });
    const waiting = await storeSubmission(deps.system, { kind: "group-by", params, items: [{ inline: "{}" }] });
    // A damaged blob: the spec cut short.
    const spec = (await deps.system.readText(keys.spec(pending.id))) ?? "";
    await deps.system.writeText(keys.spec(pending.id), spec.slice(0, spec.length / 2));

    const view = await readStatusView(sources, { nowMs: T0 });
    expect(view.jobs.active.map((j) => j.id)).toEqual([running.id]);
    expect(view.jobs.pending.map((j) => j.id)).toEqual([waiting.id]);
    expect(view.problems).toHaveLength(2);
    expect(view.problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          new RegExp(`^job ${damaged.id}: its state is not in a shape this version reads \\(.*status`),
        ),
        expect.stringMatching(new RegExp(`^job ${pending.id}: .*JSON`)),
      ]),
    );
  });

  it("an abort rejects instead of being shown as a problem", async () => {
    const { sources } = world();
    const reason = new Error("stop");
    await expect(readStatusView(sources, { abortSignal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });
});

describe("status page rendering (src/app/renderStatusPage.ts)", () => {
  it("escapes every value from storage: a hostile holder, job kind or failure reason stays text", () => {
    const evil = `<img src=x onerror="alert(1)">`;
    const view = buildStatusView(
      snapshot({
        leader: leader({ holder: evil }),
        terms: [{ holder: evil, epoch: 7, sinceMs: T0 + 60_000 }],
        jobs: {
          active: [job({ id: "j1", kind: evil, failures: [{ item: 1, reason: evil }] })],
          moreActive: 0,
          pending: [],
          recent: [],
        },
      }),
    );
    const page = renderStatusPage(view, { nonce: "abc" });
    expect(page).not.toContain("<img");
    expect(page).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
  });

  it("shows a failed job with why it stopped (escaped), among the recently ended", () => {
    const reason = "the aggregate would have 5 groups, more than MAX_AGGREGATE_GROUPS (3) <b>";
    const view = buildStatusView(
      snapshot({
        jobs: {
          active: [],
          moreActive: 0,
          pending: [],
          recent: [job({ id: "j9", status: "failed", failureReason: reason, failures: [] })],
        },
      }),
    );
    expect(view.jobs.recent[0]).toMatchObject({ status: "failed", failureReason: reason });
    const page = renderStatusPage(view, { nonce: "n" });
    expect(page).toContain('<span class="status failed">failed</span>');
    expect(page).toContain(
      "the job failed: the aggregate would have 5 groups, more than MAX_AGGREGATE_GROUPS (3) &lt;b&gt;",
    );
  });

  it("is self-contained: nothing loaded from elsewhere, style and script carry the nonce the CSP allows", () => {
    const page = renderStatusPage(buildStatusView(snapshot()), { nonce: "r4nd0m" });
    expect(page).not.toMatch(/\ssrc=|<link|@import|url\(|https?:\/\//i);
    expect(page.match(/<style nonce="r4nd0m">/g)).toHaveLength(1);
    expect(page.match(/<script nonce="r4nd0m">/g)).toHaveLength(1);
    expect(page.match(/<script|<style/g)).toHaveLength(2);
    expect(page).not.toMatch(/\sstyle="/); // the CSP forbids inline style attributes: bars are SVG geometry
    const csp = statusPageHeaders("r4nd0m")["content-security-policy"];
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'nonce-r4nd0m'");
    expect(csp).toContain("style-src 'nonce-r4nd0m'");
    expect(statusPageHeaders("r4nd0m")).toMatchObject({
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
    });
  });

  it("marks the leader, job numbers and poison depths for readers (data-field), with the refresh interval on the body", () => {
    const page = renderStatusPage(buildStatusView(snapshot()), { nonce: "n" });
    expect(page).toContain('data-field="leader-holder" data-holder="b-2">b-2</span>');
    expect(page).toContain('<dd data-field="leader-epoch">7</dd>');
    expect(page).toContain('<time data-field="leader-since" datetime="2026-05-01T12:01:00.000Z">');
    expect(page).toMatch(
      /<tr data-job="j1">[\s\S]*data-field="done">4<[\s\S]*data-field="failed">1<[\s\S]*data-field="dispatched">8<[\s\S]*data-field="total">10</,
    );
    expect(page).toContain(
      '<tr data-queue="work-items-poison"><td><code>work-items-poison</code></td><td class="num bad" data-field="depth">2</td></tr>',
    );
    expect(page).toContain(`<body data-refresh-ms="${STATUS_REFRESH_MS}" data-refreshes="0">`);
    expect(page).toContain('<noscript><meta http-equiv="refresh" content="5"></noscript>');
  });

  it("says plainly when nobody leads, no term was recorded and there are no jobs", () => {
    const page = renderStatusPage(
      buildStatusView(
        snapshot({
          leader: leader({ holder: undefined, epoch: 0, since: undefined, transitions: 0, leaseState: "available" }),
          terms: [],
          jobs: { active: [], moreActive: 0, pending: [], recent: [] },
        }),
      ),
      { nonce: "n" },
    );
    expect(page).toContain("Nobody holds the lease</span> right now.");
    expect(page).toContain("No term recorded yet.");
    expect(page).toContain("No active jobs.");
  });

  it("after a leader's kill, says the lease lapsed (expired, or broken by a takeover), not that its holder released it", () => {
    const render = (leaseState: LeaderInfo["leaseState"]): string =>
      renderStatusPage(buildStatusView(snapshot({ leader: leader({ holder: undefined, epoch: 7, leaseState }) })), {
        nonce: "n",
      });
    expect(render("broken")).toContain(
      "The lease of epoch 7 was broken: a takeover ended a term that had fallen silent",
    );
    expect(render("expired")).toContain("The lease of epoch 7 expired: its holder stopped renewing it");
    for (const state of ["broken", "expired"] as const)
      expect(render(state)).not.toContain("releases the lease when its step ends");
    expect(render("available")).toContain("releases the lease when its step ends");
  });
});
