import { randomUUID } from "node:crypto";
import { type CoordinatorApp } from "../../../../src/app/context";
import { createRepoApp } from "../../../support/repoKinds";
import { runCoordinatorTick } from "../../../../src/app/operations";
import { LeaderSentinel } from "../../../../src/coordination/wake/sentinel";
import { delay } from "../../../../src/library/util/delay";
import { silentLogger } from "../../../../src/library/util/logger";
import { PRICES, priceClassOf, type PriceClass } from "../throughput/cost";
import { queueEndpointOf, RequestCounter, type RequestCount } from "../throughput/requestCounter";

/**
 * What leadership costs, with takeover and without, on the app's own wiring (`createCoordinatorApp`, the app's
 * defaults, LEASE_TAKEOVER_DEADLINE_MS=0 for "without") against the benchmark's Azurite, every storage request counted
 * in the SDK's pipeline and priced at list prices (scripts/verification/bench/throughput/cost.ts; Set Blob Metadata
 * — a heartbeat — is an "other" operation on general-purpose v2 accounts, like a lease renewal):
 *
 * - a busy leader: one process leading a term for the whole measurement (renewals, step-down checks, with takeover
 *   heartbeats, and the sentinel a leader with active jobs keeps hidden on the wake queue), counted from the start of
 *   its task to its end and scaled to an hour (a term's one-off requests — acquire, record, epoch claim, release — are
 *   left out: the idle ticks below show what they cost);
 * - a busy watcher: another process whose worker invocations keep coming (it is armed every second), watching that
 *   leader, scaled to an hour (nothing without takeover: the watcher is off);
 * - an idle app: timer ticks with no job (the step finds nothing to do), per tick, times the ticks of a month at the
 *   default one-minute schedule; the watcher is never armed (no worker or wake-up invocation), as the run shows.
 *
 * Executions: takeover adds none to a busy hour (heartbeats run in the leader's invocation, the watcher's reads in the
 * background) except one wake-up after each takeover, counted here as the watchers' wake-ups; an idle month is the
 * same 43,200 timer executions either way.
 */

/** A minute's ticks in a 30-day month at the default schedule (`0 * * * * *`). */
export const TICKS_PER_MONTH = 30 * 24 * 60;

/** Requests by price class, and what they cost. */
export interface PricedRequests {
  requests: number;
  byClass: Record<PriceClass, number>;
  storageUSD: number;
}

/** One mode's figures (takeover on, or off). */
export interface ModeCost {
  takeover: boolean;
  /** A busy leader's requests per hour, by price class, and their cost. */
  /** With `sentinelHides`: the sentinel's Update Messages (a leader with active jobs keeps one hidden). */
  busyLeaderPerHour: PricedRequests & { heartbeats: number; renewals: number; sentinelHides: number };
  /** A busy non-leader process's watcher, per hour. */
  busyWatcherPerHour: PricedRequests & { wakeUpsSent: number };
  /** An idle app (no job), per month at one tick a minute: storage and the ticks' executions. */
  idlePerAppMonth: PricedRequests & {
    requestsPerTick: number;
    executions: number;
    executionsUSD: number;
    totalUSD: number;
  };
  /** Lease reads of the idle app's watcher over the idle ticks (0: it never ran). */
  idleWatcherReads: number;
}

/** Both modes, measured in one run. */
export interface LeadershipCost {
  seconds: number;
  idleTicks: number;
  withTakeover: ModeCost;
  withoutTakeover: ModeCost;
  prices: typeof PRICES;
}

/** Counts what a set of requests costs, scaled by `scale`. */
function priced(counts: readonly RequestCount[], scale: number): PricedRequests {
  const byClass: Record<PriceClass, number> = { queue: 0, blobWrite: 0, blobReadOther: 0, free: 0 };
  for (const count of counts) byClass[priceClassOf(count)] += count.requests * scale;
  const storageUSD =
    (byClass.queue * PRICES.queueOperationPerMillion +
      byClass.blobWrite * PRICES.blobWritePerMillion +
      byClass.blobReadOther * PRICES.blobReadOtherPerMillion) /
    1_000_000;
  const rounded = Object.fromEntries(Object.entries(byClass).map(([key, value]) => [key, Math.round(value)])) as Record<
    PriceClass,
    number
  >;
  const requests = Object.values(rounded).reduce((sum, value) => sum + value, 0);
  return { requests, byClass: rounded, storageUSD: round6(storageUSD) };
}

function round6(value: number): number {
  return Math.round(value * 1_000_000) / 1_000_000;
}

/** Requests of one kind: lease renewals, or metadata writes to the lease blob (heartbeats and the record). */
function countOf(counts: readonly RequestCount[], test: (count: RequestCount) => boolean): number {
  return counts.filter(test).reduce((sum, count) => sum + count.requests, 0);
}

/** The app for one measured process: fresh containers and queues, counted requests, the app's defaults. */
function appFor(
  connectionString: string,
  names: Record<string, string>,
  instance: string,
  takeover: boolean,
  counter: RequestCounter,
): CoordinatorApp {
  return createRepoApp(
    {
      COORDINATION_STORAGE: connectionString,
      WEBSITE_INSTANCE_ID: instance,
      ...names,
      ...(takeover ? {} : { LEASE_TAKEOVER_DEADLINE_MS: "0" }),
    },
    { policies: [counter.policy] },
  );
}

const sink = { logger: silentLogger, emit: () => undefined };

/** Measures one mode. */
async function measureMode(
  connectionString: string,
  seconds: number,
  idleTicks: number,
  takeover: boolean,
): Promise<ModeCost> {
  const tag = `${takeover ? "on" : "off"}-${randomUUID().slice(0, 6)}`;
  const names = {
    LEASE_CONTAINER: `cost-lease-${tag}`,
    STATE_CONTAINER: `cost-state-${tag}`,
    SYSTEM_CONTAINER: `cost-system-${tag}`,
    INPUT_CONTAINER: `cost-input-${tag}`,
    WORK_QUEUE: `cost-work-${tag}`,
    RESULTS_QUEUE: `cost-results-${tag}`,
    WAKE_QUEUE: `cost-wake-${tag}`,
  };
  const queueEndpoint = queueEndpointOf(connectionString);
  const leaderCounter = new RequestCounter("leader", queueEndpoint);
  const watcherCounter = new RequestCounter("watcher", queueEndpoint);
  const leader = appFor(connectionString, names, "cost-leader", takeover, leaderCounter);
  const watcher = appFor(connectionString, names, "cost-watcher", takeover, watcherCounter);
  await leader.leaseStore.ensureExists();
  leaderCounter.take();
  // A busy hour: the leader holds one term for the whole measurement while the watcher's invocations keep coming.
  const holdMs = seconds * 1000;
  const busy = new AbortController();
  const armed = (async () => {
    while (!busy.signal.aborted) {
      watcher.leaderWatch.activity();
      await delay(1000, { abortSignal: busy.signal }).catch(() => undefined);
    }
  })();
  let leaderCounts: RequestCount[] = [];
  // A busy leader has active jobs, so it keeps its sentinel hidden on the wake queue, as the app's step does.
  const hiddenS = leader.settings.LEADER_SENTINEL_SECONDS;
  const sentinel =
    hiddenS > 0
      ? new LeaderSentinel(leader.wakeQueue, { hiddenS, from: leader.instanceId, logger: silentLogger })
      : undefined;
  const held = await leader.elector.tryLead(async (term) => {
    leaderCounter.take(); // the term's one-off requests: not part of an hour of leading
    sentinel?.arm({ abortSignal: term.signal });
    // A busy leader's step reports progress as it works: without it the stall watchdog (STEP_STALL_TIMEOUT_MS, 60 s
    // by default) could end a hold of 60 s or more.
    const endMs = performance.now() + holdMs;
    while (performance.now() < endMs) {
      await delay(Math.min(1000, endMs - performance.now()), { abortSignal: term.signal });
      term.reportProgress();
    }
    leaderCounts = leaderCounter.take();
    await sentinel?.end({ remove: true });
  });
  busy.abort();
  await armed;
  await watcher.leaderWatch.stop();
  if (held.outcome !== "completed")
    throw new Error(
      `The cost leader did not hold its term: ${held.outcome}${held.outcome === "aborted" ? ` (${held.reason}: ${String(held.error)})` : ""}.`,
    );
  const watcherCounts = watcherCounter.take();
  const perHour = 3_600_000 / holdMs;
  const leaseBlob = (count: RequestCount): boolean => count.name === names.LEASE_CONTAINER;
  const busyLeaderPerHour = {
    ...priced(leaderCounts, perHour),
    heartbeats: Math.round(
      countOf(leaderCounts, (count) => leaseBlob(count) && count.comp === "metadata" && count.method === "PUT") *
        perHour,
    ),
    renewals: Math.round(countOf(leaderCounts, (count) => count.leaseAction === "renew") * perHour),
    sentinelHides: Math.round((sentinel?.stats.hidden ?? 0) * perHour),
  };
  const busyWatcherPerHour = { ...priced(watcherCounts, perHour), wakeUpsSent: watcher.leaderWatch.stats.wakeUps };
  // An idle month: ticks with no job, after one tick that creates what a first tick creates.
  const idleCounter = new RequestCounter("idle", queueEndpoint);
  const idle = appFor(connectionString, { ...names, LEASE_BLOB: "idle-lease" }, "cost-idle", takeover, idleCounter);
  await runCoordinatorTick(idle, sink);
  idleCounter.take();
  for (let tick = 0; tick < idleTicks; tick++) {
    const outcome = await runCoordinatorTick(idle, sink);
    if (outcome !== "completed") throw new Error(`An idle tick ended ${outcome}, not completed.`);
  }
  const idleCounts = idleCounter.take();
  const idleMonth = priced(idleCounts, TICKS_PER_MONTH / idleTicks);
  const executionsUSD = round6((TICKS_PER_MONTH * PRICES.executionPerMillion) / 1_000_000);
  return {
    takeover,
    busyLeaderPerHour,
    busyWatcherPerHour,
    idlePerAppMonth: {
      ...idleMonth,
      requestsPerTick: Math.round((idleCounts.reduce((sum, count) => sum + count.requests, 0) / idleTicks) * 10) / 10,
      executions: TICKS_PER_MONTH,
      executionsUSD,
      totalUSD: round6(idleMonth.storageUSD + executionsUSD),
    },
    idleWatcherReads: idle.leaderWatch.stats.reads,
  };
}

/** Measures both modes in one run. */
export async function measureLeadershipCost(
  connectionString: string,
  seconds: number,
  log: (line: string) => void,
): Promise<LeadershipCost> {
  const idleTicks = 10;
  log(`[cost] a busy leader and a busy watcher for ${seconds} s, then ${idleTicks} idle ticks, with takeover…`);
  const withTakeover = await measureMode(connectionString, seconds, idleTicks, true);
  log(`[cost] …and without takeover.`);
  const withoutTakeover = await measureMode(connectionString, seconds, idleTicks, false);
  return { seconds, idleTicks, withTakeover, withoutTakeover, prices: PRICES };
}

/** The cost table, for the console. */
export function formatCost(cost: LeadershipCost): string {
  const usd = (value: number): string => `$${value.toFixed(4)}`;
  const row = (mode: ModeCost): string[] => [
    mode.takeover ? "with takeover" : "without",
    `${mode.busyLeaderPerHour.requests} (${mode.busyLeaderPerHour.heartbeats} heartbeats, ${mode.busyLeaderPerHour.renewals} renewals, ${mode.busyLeaderPerHour.sentinelHides} sentinel hides) ${usd(mode.busyLeaderPerHour.storageUSD)}`,
    `${mode.busyWatcherPerHour.requests} ${usd(mode.busyWatcherPerHour.storageUSD)}`,
    `${mode.idlePerAppMonth.requestsPerTick}/tick ${usd(mode.idlePerAppMonth.totalUSD)}`,
  ];
  const lines = [
    ["", "busy leader, ops/hour", "busy watcher, ops/hour", "idle app, per month"],
    row(cost.withTakeover),
    row(cost.withoutTakeover),
  ];
  const widths = lines[0]?.map((_, column) => Math.max(...lines.map((line) => (line[column] ?? "").length))) ?? [];
  return lines
    .map((line) =>
      line
        .map((cell, column) => cell.padEnd(widths[column] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}
