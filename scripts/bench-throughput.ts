/**
 * Throughput benchmark: `npm run bench:throughput -- [--items N] [--rounds N] [--out FILE] [--skip-memory]` (see
 * ./throughput/cli.ts for every flag).
 *
 * On one Azurite, in one run, with every storage request counted by a proxy in front of it (./throughput/countingProxy.ts):
 * - the project: the local runner's instance processes (real Functions registrations, host emulator) run a demo
 *   group-by job; items/s from submission to completion (./throughput/projectRun.ts);
 * - the baseline: the raw queue SDK doing the same queue operations for the same items, with worker processes
 *   (./throughput/baseline.ts);
 * in rounds of one each, the order alternating (round 1: baseline first). Then a large job (100,000 items by default)
 * for the leader's peak RSS and the job-state size. Prints tables and writes a JSON report.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { setMaxListeners } from "node:events";
import { arch, cpus, loadavg, platform, release, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { readSettings } from "../src/config/settings";
import { startAzurite, type Azurite } from "./support/azurite";
import { BASELINE_NAMES, killBaselineWorkers, runBaseline } from "./throughput/baseline";
import { parseThroughputArgs, USAGE, UsageError, type ThroughputArgs } from "./throughput/cli";
import { round, selectCounts, summarizeOps, type StorageRoles } from "./throughput/opsBreakdown";
import { runProject, type ProjectRunResult } from "./throughput/projectRun";
import type { RequestCount } from "./throughput/proxyProtocol";
import { ProxyHandle } from "./throughput/ProxyHandle";
import { detailTable, implementationReport, median, TARGETS, throughputTable, type RoundReport } from "./throughput/report";
import { memoryJobReport, memoryTable, planMemoryJob } from "./throughput/memoryJob";

const REPO_ROOT = resolve(__dirname, "..");
/** Requests this long after the last item completed still count (the last work messages' deletes). */
const TAIL_MS = 400;
/** Items of the uncounted warm-up run. */
const WARM_UP_ITEMS = 1000;

let azurite: Azurite | undefined;
let proxy: ProxyHandle | undefined;

async function main(): Promise<number> {
  let args: ThroughputArgs;
  try {
    args = parseThroughputArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`bench:throughput: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const controller = new AbortController();
  // Each run (and each run's combined deadline) listens on it.
  setMaxListeners(0, controller.signal);
  /** A function, not the property: TypeScript would keep a checked `aborted` narrowed across awaits. */
  const aborted = (): boolean => controller.signal.aborted;
  const interrupt = (): void => {
    if (controller.signal.aborted) process.exit(130);
    console.error("\nStopping (Ctrl-C again to quit at once)…");
    controller.abort();
  };
  process.on("SIGINT", interrupt);
  process.on("SIGTERM", interrupt);
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, "-");
  const outputDir = join(REPO_ROOT, ".local", `throughput-${stamp}`);
  const outPath = resolve(process.cwd(), args.out);
  const settings = readSettings({});
  const roles: StorageRoles = {
    workQueues: [settings.WORK_QUEUE],
    resultsQueues: [settings.RESULTS_QUEUE],
    leaseContainers: [settings.LEASE_CONTAINER],
    stateContainers: [settings.STATE_CONTAINER],
    inputContainers: [settings.INPUT_CONTAINER, BASELINE_NAMES.inputContainer],
    systemContainers: [settings.SYSTEM_CONTAINER],
  };

  // On disk, not in memory: Azurite's in-memory store makes one extent per queue message, and its queue GC (every
  // 60 s) removes each with a linear scan, so after a few thousand messages it stalls blob and queue service alike
  // for a minute and more (the leader then loses its lease). On disk, messages share extent files.
  azurite = await startAzurite({ persistent: true });
  proxy = await ProxyHandle.start(azurite);
  console.log(`Azurite on blob :${azurite.blobPort} queue :${azurite.queuePort}; counting proxy on blob :${proxy.blobPort} queue :${proxy.queuePort}.`);
  console.log(`${args.rounds} round(s) of ${args.items} items; ${args.instances} instances / baseline workers; schedule "${args.schedule}"; DISPATCH_BATCH_SIZE ${args.dispatchBatchSize}. Runner output: ${outputDir}`);
  // Azurite gets several times faster once its code is hot: warm it up so the first timed run is not penalised.
  const warmUpItems = Math.min(args.items, WARM_UP_ITEMS);
  console.log(`Warm-up (not counted): baseline with ${warmUpItems} items…`);
  await runBaseline({ connectionString: proxy.connectionString, items: warmUpItems, workers: args.instances, label: "warm-up", maxWaitS: 600, abortSignal: controller.signal });
  await proxy.take();

  const baselineRounds: RoundReport[] = [];
  const projectRounds: RoundReport[] = [];
  const baselineCounts: RequestCount[] = [];
  const projectCounts: RequestCount[] = [];
  const runnerCounts: RequestCount[] = [];
  const projectRuns: ProjectRunResult[] = [];
  for (let roundNo = 1; roundNo <= args.rounds && !controller.signal.aborted; roundNo++) {
    const order = roundNo % 2 === 1 ? (["baseline", "project"] as const) : (["project", "baseline"] as const);
    for (const [index, impl] of order.entries()) {
      if (aborted()) break;
      const loadBefore = round(loadavg()[0] ?? 0, 2);
      console.log(`[round ${roundNo}] ${impl}: ${args.items} items (load average ${loadBefore})…`);
      const load = (): { loadAverage1m: [number, number] } => ({ loadAverage1m: [loadBefore, round(loadavg()[0] ?? 0, 2)] });
      if (impl === "baseline") {
        const run = await runBaseline({ connectionString: proxy.connectionString, items: args.items, workers: args.instances, label: `round-${roundNo}`, maxWaitS: 600, abortSignal: controller.signal });
        const counts = selectCounts(await proxy.take(), { fromMs: run.startMs, toMs: run.endMs + TAIL_MS, sources: ["runner", "other", "unknown"] });
        roles.workQueues = [...roles.workQueues, run.queues.work];
        roles.resultsQueues = [...roles.resultsQueues, run.queues.results];
        baselineCounts.push(...counts);
        const ops = summarizeOps(counts, { items: run.items, roles });
        baselineRounds.push({ round: roundNo, order: index + 1, ok: run.ok, ...(run.problem === undefined ? {} : { problem: run.problem }), items: run.items, durationS: round(run.durationS, 2), itemsPerS: round(run.itemsPerS, 1), opsPerItem: ops.perItem, matches: run.matches, duplicates: run.duplicates, workers: run.workers, ...load() });
        console.log(`[round ${roundNo}] baseline: ${run.ok ? "ok" : `FAILED (${run.problem ?? "?"})`} — ${run.itemsPerS.toFixed(1)} items/s, ${run.durationS.toFixed(2)} s, ${ops.perItem.toFixed(2)} ops/item`);
      } else {
        const run = await runProject({ connectionString: proxy.connectionString, directConnectionString: azurite.connectionString, items: args.items, instances: args.instances, schedule: args.schedule, dispatchBatchSize: args.dispatchBatchSize, outputDir, label: `round-${roundNo}`, maxWaitS: 600, abortSignal: controller.signal });
        projectRuns.push(run);
        const all = await proxy.take();
        const fromMs = run.createdAtMs ?? run.runStartMs;
        const toMs = run.completedAtMs === undefined ? run.runEndMs : run.completedAtMs + TAIL_MS;
        const counts = selectCounts(all, { fromMs, toMs, sources: ["other", "unknown"] });
        const runner = selectCounts(all, { fromMs, toMs, sources: ["runner"] });
        projectCounts.push(...counts);
        runnerCounts.push(...runner);
        const ops = summarizeOps(counts, { items: run.items, roles });
        const wholeRun = summarizeOps(selectCounts(all, { fromMs: -Infinity, toMs: Infinity, sources: ["other", "unknown"] }), { items: run.items, roles });
        const leaders = run.instances.filter((instance) => instance.termsLed > 0).map((instance) => instance.name);
        projectRounds.push({
          round: roundNo,
          order: index + 1,
          ok: run.ok,
          ...(run.problem === undefined ? {} : { problem: run.problem }),
          items: run.items,
          durationS: run.durationS === undefined ? undefined : round(run.durationS, 2),
          itemsPerS: run.itemsPerS === undefined ? undefined : round(run.itemsPerS, 1),
          itemsPerSAfterRegistration: run.itemsPerSAfterRegistration === undefined ? undefined : round(run.itemsPerSAfterRegistration, 1),
          firstTickWaitS: run.registeredAtMs === undefined || run.createdAtMs === undefined ? undefined : round((run.registeredAtMs - run.createdAtMs) / 1000, 2),
          opsPerItem: ops.perItem,
          wholeRunOpsPerItem: wholeRun.perItem,
          runnerOpsInWindow: summarizeOps(runner, { items: run.items, roles }).total,
          wallS: round(run.wallS, 1),
          matches: run.matches,
          leaders,
          eventsPath: run.eventsPath,
          ...load(),
        });
        console.log(`[round ${roundNo}] project: ${run.ok ? "ok" : `FAILED (${run.problem ?? "?"})`} — ${run.itemsPerS?.toFixed(1) ?? "—"} items/s, ${run.durationS?.toFixed(2) ?? "—"} s, ${ops.perItem.toFixed(2)} ops/item (whole run ${wholeRun.perItem.toFixed(2)}), led by ${leaders.join(", ") || "?"}`);
      }
    }
  }

  const baseline = implementationReport(args.items, baselineRounds, summarizeOps(baselineCounts, { items: args.items * baselineRounds.length, roles }));
  const project = implementationReport(args.items, projectRounds, summarizeOps(projectCounts, { items: args.items * projectRounds.length, roles }), {
    itemsPerSAfterRegistration: median(projectRounds.map((entry) => (entry.ok && typeof entry.itemsPerSAfterRegistration === "number" ? entry.itemsPerSAfterRegistration : undefined))),
    runnerOpsPerItemExcluded: round(summarizeOps(runnerCounts, { items: args.items * projectRounds.length, roles }).perItem, 3),
  });
  const ratio = project.itemsPerS !== undefined && baseline.itemsPerS !== undefined ? round(project.itemsPerS / baseline.itemsPerS, 3) : undefined;

  let memoryJob: ReturnType<typeof memoryJobReport> | undefined;
  if (!args.skipMemory && !controller.signal.aborted) {
    const plan = planMemoryJob(args.memoryItems, args.memoryMaxMinutes, project.itemsPerS);
    console.log(plan.note);
    const run = await runProject({ connectionString: proxy.connectionString, directConnectionString: azurite.connectionString, items: plan.items, instances: args.instances, schedule: args.schedule, dispatchBatchSize: args.dispatchBatchSize, outputDir, label: "memory", maxWaitS: plan.maxWaitS, abortSignal: controller.signal });
    const all = await proxy.take();
    const counts = selectCounts(all, { fromMs: run.createdAtMs ?? run.runStartMs, toMs: run.completedAtMs === undefined ? run.runEndMs : run.completedAtMs + TAIL_MS, sources: ["other", "unknown"] });
    memoryJob = memoryJobReport(run, plan, summarizeOps(counts, { items: plan.items, roles }));
  }

  const report = {
    project,
    baseline,
    ratio,
    leaderPeakRssMiB: memoryJob?.leaderPeakRssMiB,
    nonLeaderPeakRssMiB: memoryJob?.nonLeaderPeakRssMiB,
    memoryJob,
    targets: { ratioMin: TARGETS.ratioMin, opsPerItemMax: TARGETS.opsPerItemMax, ratioMet: ratio !== undefined && ratio >= TARGETS.ratioMin, opsPerItemMet: project.opsPerItem <= TARGETS.opsPerItemMax },
    config: {
      items: args.items,
      rounds: args.rounds,
      order: "after an uncounted baseline warm-up: odd rounds baseline first, even rounds project first",
      warmUpItems: Math.min(args.items, WARM_UP_ITEMS),
      instances: args.instances,
      baselineWorkers: args.instances,
      schedule: args.schedule,
      dispatchBatchSize: args.dispatchBatchSize,
      hostQueues: "host.json extensions.queues (batchSize 16, newBatchThreshold 8, maxPollingInterval 2 s)",
      timing: "project: job createdAt → completedAt (the leader's last fold); baseline: first send → last merge",
      opsWindow: `requests from the timed window start to ${TAIL_MS} ms after its end; the project's excludes the runner's own (status polls every 1 s, submission), reported as runnerOpsPerItemExcluded`,
      azurite: "persistent (on disk in a temporary folder): the in-memory store stalls in its queue GC after a few thousand messages",
      proxy: "every request goes through a counting HTTP proxy (own process) in front of Azurite, for both implementations",
      memoryItems: args.skipMemory ? undefined : args.memoryItems,
    },
    machine: { loadAverage1mAtEnd: round(loadavg()[0] ?? 0, 2), platform: platform(), release: release(), arch: arch(), cpus: cpus().length, cpuModel: cpus()[0]?.model, totalMemoryMiB: Math.round(totalmem() / 1024 / 1024), node: process.version },
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    runnerOutput: outputDir,
  };
  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(outPath, `${JSON.stringify(report, null, 2)}\n`);

  console.log("");
  for (const line of throughputTable(baseline, project, ratio)) console.log(line);
  console.log("");
  for (const line of detailTable("Project operations in the timed windows (the runner's own excluded):", project)) console.log(line);
  console.log("");
  for (const line of detailTable("Baseline operations in the timed windows:", baseline)) console.log(line);
  if (memoryJob !== undefined) {
    console.log("");
    for (const line of memoryTable(memoryJob)) console.log(line);
  }
  console.log(`\nReport: ${outPath}`);
  const failed = [...baselineRounds, ...projectRounds].some((entry) => !entry.ok) || memoryJob?.ok === false;
  if (controller.signal.aborted) return 130;
  return failed ? 1 : 0;
}

async function cleanUp(): Promise<void> {
  killBaselineWorkers();
  await proxy?.stop().catch(() => proxy?.kill());
  await azurite?.stop().catch(() => undefined);
}

process.once("exit", () => {
  killBaselineWorkers();
  proxy?.kill();
});

main().then(
  async (code) => {
    await cleanUp();
    process.exit(code);
  },
  async (error: unknown) => {
    console.error(`bench:throughput failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    await cleanUp();
    process.exit(1);
  },
);
