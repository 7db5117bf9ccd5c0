/**
 * Throughput benchmark (issue 9): `npm run bench:throughput -- [--rounds N] [--out FILE] [--skip-memory]` (see
 * ./throughput/cli.ts for every flag).
 *
 * On one Azurite, in one run, three scenarios — `small` (inline items of about 100 bytes of CSV), `blob` (one input
 * blob per item) and `short` (a short job of small items) — each through the implementations below, each ratio's two
 * sides back to back in every round, who goes first alternating (the per-item loop after them, in the first
 * `--per-item-rounds` only):
 * - the project: fresh instance processes of the real app on the local host, one job submitted through the library
 *   (which wakes the coordinator), at the app's default settings and schedule (./throughput/projectRun.ts);
 * - the per-item loop: the raw SDKs sending one work message per item and one result per item;
 * - the batched loop: the raw SDKs sending the same unit messages as the app's leader (./throughput/baseline.ts);
 * - the idle app and the idle batched loop: the same two, the instances (workers) idle for IDLE_LOOP_MS before the
 *   submission (the producer's first send), so their queue polling has backed off to its longest wait, 2 s, as a
 *   deployed app's idle instances' has: a like-for-like pair, where the first pair starts the loop's workers fresh.
 * Every storage request is counted by a request policy in each process's SDK pipeline (./throughput/requestCounter.ts)
 * and priced (./throughput/cost.ts), beside the peers' estimates (./throughput/peers.ts). Then one large job end to end
 * for the leader's memory. Prints tables, writes JSON.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { setMaxListeners } from "node:events";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { readSettings } from "../../../src/app/settings";
import { ensureAppStorage } from "../../../dev/src/local/storageSetup";
import { parseSchedule } from "../../../dev/src/local/timerTrigger";
import { startAzurite, type Azurite } from "../../../dev/src/local/azurite";
import { machineInfo, uploadInputBlobs } from "./benchSetup";
import { killBaselineWorkers, runBaseline, type BaselineMode } from "./throughput/baseline";
import { IDLE_LOOP_MS } from "./throughput/baselineProtocol";
import { sumOf } from "./throughput/cpuTimes";
import { parseThroughputArgs, USAGE, UsageError, type ThroughputArgs } from "./throughput/cli";
import { readBefore, roundOrder, type BeforeFigures } from "./throughput/compare";
import { PRICES, PRICES_NOTE } from "./throughput/cost";
import { peerEstimates } from "./throughput/peers";
import { round, type StorageRoles } from "./throughput/opsBreakdown";
import { runProject } from "./throughput/projectRun";
import {
  IMPLEMENTATIONS,
  scenarioReport,
  scenarioTable,
  summarizeImplementation,
  TARGETS,
  type Implementation,
  type RunSample,
  type ScenarioReport,
} from "./throughput/report";
import { meanItemBytes, scenarioJob, SCENARIOS, type ScenarioJob, type ScenarioName } from "./throughput/scenarios";
import { appUnitItems } from "./throughput/units";

const REPO_ROOT = resolve(__dirname, "..", "..", "..");
/** Items of the uncounted warm-up run. */
const WARM_UP_ITEMS = 1000;
const MAX_WAIT_S = 900;

let azurite: Azurite | undefined;

const load = (): number => round(loadavg()[0] ?? 0, 2);

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
  setMaxListeners(0, controller.signal);
  const aborted = (): boolean => controller.signal.aborted;
  const interrupt = (): void => {
    if (controller.signal.aborted) process.exit(130);
    console.error("\nStopping (Ctrl-C again to quit at once)…");
    controller.abort();
  };
  process.on("SIGINT", interrupt);
  process.on("SIGTERM", interrupt);
  let before: ((scenario: string) => BeforeFigures | undefined) | undefined;
  if (args.before !== undefined) {
    try {
      before = readBefore(resolve(process.cwd(), args.before));
    } catch (error) {
      console.error(`bench:throughput: --before ${args.before}: ${(error as Error).message}`);
      return 2;
    }
  }
  const startedAt = new Date();
  const loadAtStart = load();
  const outputDir = join(REPO_ROOT, ".local", `throughput-${startedAt.toISOString().replace(/[:.]/g, "-")}`);
  mkdirSync(outputDir, { recursive: true });
  const outPath = resolve(process.cwd(), args.out);
  const settings = readSettings({});
  const roles: StorageRoles = {
    workQueues: [settings.WORK_QUEUE],
    resultsQueues: [settings.RESULTS_QUEUE],
    leaseContainers: [settings.LEASE_CONTAINER],
    stateContainers: [settings.STATE_CONTAINER],
    inputContainers: [settings.INPUT_CONTAINER],
    systemContainers: [settings.SYSTEM_CONTAINER],
  };

  // On disk: in-memory Azurite stalls for a minute and more in its queue GC after a few thousand messages.
  azurite = await startAzurite({ persistent: true });
  const connectionString = azurite.connectionString;
  await ensureAppStorage(connectionString, settings);
  console.log(
    `Azurite on blob :${azurite.blobPort} queue :${azurite.queuePort}. ${args.rounds} round(s); ${args.instances} instances / baseline workers; schedule "${args.schedule}"; units of ≤ ${settings.WORK_UNIT_MAX_ITEMS} items (≤ ${settings.WORK_UNIT_MAX_BLOB_ITEMS} naming blobs, a job's in-flight window cut into ${settings.WORK_UNIT_SPREAD} units) and ${settings.WORK_UNIT_MAX_BYTES} bytes. Output: ${outputDir}. Load average ${loadAtStart}.`,
  );

  const jobs: Record<ScenarioName, ScenarioJob> = {
    small: scenarioJob("small", args.smallItems, "bench/small"),
    blob: scenarioJob("blob", args.blobItems, "bench/blob"),
    short: scenarioJob("short", args.shortItems, "bench/short"),
  };
  const inputs = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(settings.INPUT_CONTAINER);
  await uploadInputBlobs(inputs, jobs.blob.blobs);

  const baseline = (mode: BaselineMode, job: ScenarioJob, label: string, idleBeforeSendMs = 0) =>
    runBaseline({
      mode,
      connectionString,
      job,
      inputContainer: settings.INPUT_CONTAINER,
      unitMaxItems: appUnitItems(settings, job.items),
      unitMaxBytes: settings.WORK_UNIT_MAX_BYTES,
      workers: args.instances,
      label: idleBeforeSendMs > 0 ? `idle-${label}` : label,
      idleBeforeSendMs,
      countsPrefix: join(outputDir, "requests"),
      maxWaitS: MAX_WAIT_S,
      abortSignal: controller.signal,
    });

  // Azurite gets several times faster once its code is hot: warm it up so the first timed run is not penalised.
  console.log(`Warm-up (not counted): per-item loop with ${WARM_UP_ITEMS} small items…`);
  await baseline("per-item", scenarioJob("small", WARM_UP_ITEMS, "bench/warm-up"), "warm-up");

  const samples: Record<ScenarioName, Record<Implementation, RunSample[]>> = {
    small: { project: [], perItem: [], batched: [], idleProject: [], idleBatched: [] },
    blob: { project: [], perItem: [], batched: [], idleProject: [], idleBatched: [] },
    short: { project: [], perItem: [], batched: [], idleProject: [], idleBatched: [] },
  };
  for (let roundNo = 1; roundNo <= args.rounds && !aborted(); roundNo++) {
    for (const scenario of SCENARIOS) {
      const job = jobs[scenario];
      // Each ratio's two sides back to back, alternating who goes first; the per-item loop after them.
      const order = roundOrder(roundNo, args.perItemRounds);
      for (const [index, impl] of order.entries()) {
        if (aborted()) break;
        const before = load();
        const label = `${scenario}-r${roundNo}`;
        console.log(`[round ${roundNo}] ${scenario} / ${impl}: ${job.items.length} items (load average ${before})…`);
        let sample: RunSample;
        const common = (run: { ok: boolean; problem: string | undefined; items: number }) => ({
          round: roundNo,
          order: index + 1,
          ok: run.ok,
          ...(run.problem === undefined ? {} : { problem: run.problem }),
          items: run.items,
        });
        if (impl === "project" || impl === "idleProject") {
          const run = await runProject({
            connectionString,
            job,
            instances: args.instances,
            schedule: args.schedule,
            outputDir,
            label: impl === "idleProject" ? `idle-${label}` : label,
            idleBeforeSubmitMs: impl === "idleProject" ? IDLE_LOOP_MS : 0,
            maxWaitS: MAX_WAIT_S,
            abortSignal: controller.signal,
            log: console.log,
          });
          sample = {
            ...common(run),
            itemsPerS: run.itemsPerS,
            submitToFirstDispatchS: run.submitToFirstDispatchS,
            submitToCompletedS: run.submitToCompletedS,
            counts: run.counts,
            executions: run.executions,
            gbSeconds: run.gbSeconds,
            gbSecondsUpper: run.gbSecondsUpper,
            loadAverage1m: [before, load()] as [number, number],
            extra: {
              jobId: run.jobId,
              leaders: run.instances
                .filter((instance) => instance.termsLed > 0)
                .map((instance) => `${instance.name} (${instance.termsLed} terms)`),
              // Of the instance processes, in the run's counting window (./throughput/projectRun.ts).
              instancesCpuS: sumOf(run.instances.map((instance) => instance.cpuS)),
              instancesRunQueueWaitS: sumOf(run.instances.map((instance) => instance.runQueueWaitS)),
            },
          };
        } else {
          const run = await baseline(
            impl === "perItem" ? "per-item" : "batched",
            job,
            label,
            impl === "idleBatched" ? IDLE_LOOP_MS : 0,
          );
          roles.workQueues = [...roles.workQueues, run.queues.work];
          roles.resultsQueues = [...roles.resultsQueues, run.queues.results];
          const processed = run.workers.reduce(
            (sum, worker) => sum + (worker.processed ?? 0) + (worker.failed ?? 0),
            0,
          );
          sample = {
            ...common(run),
            itemsPerS: run.itemsPerS,
            submitToFirstDispatchS: run.firstSendMs === undefined ? undefined : (run.firstSendMs - run.startMs) / 1000,
            submitToCompletedS: run.durationS,
            counts: run.counts,
            executions: { worker: processed },
            gbSeconds: undefined,
            loadAverage1m: [before, load()] as [number, number],
            extra: {
              messages: run.messages,
              duplicates: run.duplicates,
              workersCpuS: run.workersCpuS,
              workersRunQueueWaitS: run.workersRunQueueWaitS,
              producerConsumerCpuS: run.producerConsumerCpuS,
            },
          };
        }
        samples[scenario][impl].push(sample);
        const ops = sample.counts.reduce((sum, count) => sum + count.requests, 0) / Math.max(1, sample.items);
        console.log(
          `[round ${roundNo}] ${scenario} / ${impl}: ${sample.ok ? "ok" : `FAILED (${sample.problem ?? "?"})`} — ${sample.itemsPerS?.toFixed(1) ?? "—"} items/s, ${ops.toFixed(3)} ops/item${sample.submitToFirstDispatchS === undefined ? "" : `, first dispatch ${sample.submitToFirstDispatchS.toFixed(2)} s`}`,
        );
      }
    }
  }

  const scenarios = {} as Record<ScenarioName, ScenarioReport>;
  for (const scenario of SCENARIOS) {
    const summaries = Object.fromEntries(
      IMPLEMENTATIONS.map((impl) => [impl, summarizeImplementation(samples[scenario][impl], roles)]),
    ) as Record<Implementation, ReturnType<typeof summarizeImplementation>>;
    scenarios[scenario] = scenarioReport(
      scenario,
      jobs[scenario].items.length,
      meanItemBytes(jobs[scenario]),
      summaries,
      before?.(scenario),
    );
  }

  let memory: Record<string, unknown> | undefined;
  let memoryOk = true;
  // Growth of the live heap after a full collection, from the job's start to its end (0 when not sampled twice).
  const heapGrowth = (instance: { heapMiB?: { heapUsedMiB: number }[] }): number =>
    (instance.heapMiB?.at(-1)?.heapUsedMiB ?? 0) - (instance.heapMiB?.[0]?.heapUsedMiB ?? 0);
  if (!args.skipMemory && !aborted()) {
    const job = scenarioJob("small", args.memoryItems, "bench/memory");
    const manifest = "manifests/bench-memory.ndjson";
    const text = `${job.items.map((item) => JSON.stringify(item)).join("\n")}\n`;
    await inputs.getBlockBlobClient(manifest).upload(text, Buffer.byteLength(text));
    // Idle: past the instances' first timer tick, so the one that will lead has run the coordinator code once.
    const nextTick = parseSchedule(args.schedule, "coordinator").next(new Date(Date.now() + 15_000));
    const idleWaitS = Math.min(120, Math.ceil((nextTick.getTime() - Date.now()) / 1000) + 5);
    console.log(`Memory job: ${args.memoryItems} small items from a manifest, end to end (load average ${load()})…`);
    const run = await runProject({
      connectionString,
      job,
      manifest,
      instances: args.instances,
      schedule: args.schedule,
      outputDir,
      label: "memory",
      maxWaitS: 3600,
      memory: { idleWaitS },
      abortSignal: controller.signal,
      log: console.log,
    });
    memoryOk = run.ok;
    const leaders = run.instances.filter((instance) => instance.termsLed > 0);
    const growth = (instance: (typeof leaders)[number]): number =>
      (instance.peakRssMiB ?? 0) - (instance.idleRssMiB ?? 0);
    const leader = [...leaders].sort((a, b) => heapGrowth(b) - heapGrowth(a))[0];
    const leaderGrowthMiB = leader === undefined ? undefined : round(growth(leader), 1);
    const heapByInstance = Object.fromEntries(
      run.instances.map((instance) => [
        instance.name,
        {
          startMiB: instance.heapMiB?.[0]?.heapUsedMiB,
          endMiB: instance.heapMiB?.at(-1)?.heapUsedMiB,
          maxMiB: Math.max(0, ...(instance.heapMiB ?? []).map((sample) => sample.heapUsedMiB)),
          growthMiB: round(heapGrowth(instance), 1),
          samples: instance.heapMiB?.length ?? 0,
          led: instance.termsLed > 0,
        },
      ]),
    );
    const worstGrowthMiB = Math.max(...run.instances.map(heapGrowth));
    memory = {
      ok: run.ok,
      ...(run.problem === undefined ? {} : { problem: run.problem }),
      items: run.items,
      leader: leader?.name,
      leaderHeapGrowthMiB: leader === undefined ? undefined : round(heapGrowth(leader), 1),
      heapByInstance,
      target: `the live heap after a full collection grows ≤ ${TARGETS.heapGrowthMaxMiB} MiB from the job's start to its end, on every instance (this job: ${args.memoryItems} items)`,
      met:
        run.instances.every((instance) => (instance.heapMiB?.length ?? 0) >= 2) &&
        worstGrowthMiB <= TARGETS.heapGrowthMaxMiB,
      how: "each instance started with --expose-gc and a preload (throughput/heapSampler.ts) that, on SIGUSR2, runs a full collection and notes heapUsed and RSS; signalled after idling past a timer tick just before the submission, every 5 s through the job and after its end. RSS as before: VmRSS idle, then VmHWM reset (clear_refs 5) and read after completion: the peak during the job (the collections lower it)",
      leaderIdleRssMiB: leader?.idleRssMiB,
      leaderPeakRssMiB: leader?.peakRssMiB,
      leaderRssGrowthMiB: leaderGrowthMiB,
      submitToCompletedS: run.submitToCompletedS === undefined ? undefined : round(run.submitToCompletedS, 1),
      itemsPerS: run.itemsPerS === undefined ? undefined : round(run.itemsPerS, 1),
      opsPerItem: round(run.counts.reduce((sum, count) => sum + count.requests, 0) / Math.max(1, run.items), 3),
      matches: run.matches,
      instances: run.instances,
    };
  }

  const peers = peerEstimates();
  const report = {
    scenarios,
    memory,
    peers,
    prices: { ...PRICES, note: PRICES_NOTE },
    config: {
      rounds: args.rounds,
      order: `after an uncounted warm-up; in every round the project and the batched loop back to back, then the idle project and the idle batched loop (odd rounds the project first in each pair, even rounds the loop), the per-item loop after them in the first ${args.perItemRounds} round(s) only`,
      idle: `the idle pair: the app's instances after they were all ready, and the loop's workers, polled their empty queues for ${IDLE_LOOP_MS} ms before the submission or the producer's first send (a back-off of 100 ms doubling with ±20 % jitter, then at its longest, 2 s, host.json's maxPollingInterval), as a deployed app's idle instances; the first pair submits as soon as the instances are ready and sends as soon as the workers are; timed and counted like the first pair`,
      items: { small: args.smallItems, blob: args.blobItems, short: args.shortItems },
      ...(args.before === undefined ? {} : { before: args.before }),
      instances: args.instances,
      baselineWorkers: args.instances,
      schedule: args.schedule,
      appSettings: `the app's defaults (DISPATCH_BATCH_SIZE ${settings.DISPATCH_BATCH_SIZE}, WORK_UNIT_MAX_ITEMS ${settings.WORK_UNIT_MAX_ITEMS}, WORK_UNIT_MAX_BLOB_ITEMS ${settings.WORK_UNIT_MAX_BLOB_ITEMS}, WORK_UNIT_SPREAD ${settings.WORK_UNIT_SPREAD}, WORK_UNIT_MAX_BYTES ${settings.WORK_UNIT_MAX_BYTES}, STEP_BUDGET_MS ${settings.STEP_BUDGET_MS})`,
      unitItems: Object.fromEntries(
        SCENARIOS.map((scenario) => [scenario, appUnitItems(settings, jobs[scenario].items)]),
      ),
      hostQueues: "host.json extensions.queues (batchSize 16, newBatchThreshold 8, maxPollingInterval 2 s)",
      timing:
        "project: start of submitJob → first status poll with dispatched > 0 (50 ms polls) and → the leader's completedAt; baselines: the producer's start → last merge",
      counting:
        "every storage request through a request policy in each process's SDK pipeline: the instances' (app and host polling), the submission's; the baselines' producer, consumer and workers (from the producer's start); project: from the submission's start until 400 ms after the last invocation that ended before the instances were quiet for 8 s after completion (what the job still causes: follow-up wake-ups and their steps, with the idle polling meanwhile); baselines: until the last merge. Not counted: the benchmark's status polls and setup (queues, input blobs, manifest)",
      executions:
        "project: the host's Executing lines in the same window (to quiet after completion), every function (worker, wake, coordinator); baselines: work messages their workers processed, as if each were a function execution",
      gbSeconds:
        "project only, an estimate: per instance as Flex would place the invocations (it scales each queue- or timer-triggered function on instances of its own: https://learn.microsoft.com/azure/azure-functions/event-driven-scaling): workers one instance per local process, the wake-up function on one instance (a few messages; target-based scaling asks one instance per 16), the timer on one; the time at least one invocation ran (from the local host's Executing/Executed lines), each activity period at least 1 s and rounded up to 100 ms, × 2 GB (Flex Consumption's billing rule: https://learn.microsoft.com/azure/azure-functions/flex-consumption-plan#billing); computeUpperUSD bills each execution alone (at least 1 s each), the bound should the minimum apply per execution; invocation durations on this loaded 2-core machine, not Azure's",
      azurite: "persistent (on disk in a temporary folder)",
    },
    machine: machineInfo({ start: loadAtStart, end: load() }),
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    output: outputDir,
  };
  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(outPath, `${JSON.stringify(report, null, 2)}\n`);

  console.log("");
  for (const scenario of SCENARIOS) {
    for (const line of scenarioTable(scenario, scenarios[scenario])) console.log(line);
    console.log("");
  }
  if (memory !== undefined)
    console.log(
      `Memory job: ${String(memory.items)} items — ${memory.ok === true ? "completed" : `FAILED (${String(memory.problem)})`}; leader ${String(memory.leader)}: live heap after a full collection grew ${String(memory.leaderHeapGrowthMiB)} MiB (every instance: ${JSON.stringify(memory.heapByInstance)}; target ≤ ${TARGETS.heapGrowthMaxMiB}) — ${memory.met === true ? "met" : "NOT met"}; RSS idle ${String(memory.leaderIdleRssMiB)} MiB, peak ${String(memory.leaderPeakRssMiB)} MiB, growth ${String(memory.leaderRssGrowthMiB)} MiB`,
    );
  console.log("Peers, USD per million items (estimates from published prices, not measured):");
  for (const peer of peers)
    console.log(
      `  ${peer.name}: ${peer.lowerBound ? "≥ " : ""}$${peer.usdPerMillionItems.toFixed(4)} — ${peer.how} (${peer.sources.join(", ")})`,
    );
  console.log(`Prices: ${PRICES_NOTE}.`);
  console.log(`\nReport: ${outPath}`);
  if (aborted()) return 130;
  const failed =
    SCENARIOS.some((scenario) =>
      IMPLEMENTATIONS.some((impl) => samples[scenario][impl].some((sample) => !sample.ok)),
    ) || !memoryOk;
  return failed ? 1 : 0;
}

async function cleanUp(): Promise<void> {
  killBaselineWorkers();
  await azurite?.stop().catch(() => undefined);
}

process.once("exit", () => killBaselineWorkers());

main().then(
  async (code) => {
    await cleanUp();
    process.exit(code);
  },
  async (error: unknown) => {
    console.error(
      `bench:throughput failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    await cleanUp();
    process.exit(1);
  },
);
