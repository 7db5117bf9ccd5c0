/**
 * The project against the real Durable Task Framework (issue 35): `npm run bench:peer -- [--rounds N] …` (see
 * ./peer/cli.ts for every flag).
 *
 * On one Azurite, in one run, bench:throughput's scenarios (./throughput/scenarios.ts) through:
 * - the project: fresh instance processes of the real app on the local host, one job submitted through the library,
 *   at the app's default settings (./throughput/projectRun.ts);
 * - the framework: DurableTask.Core with its Azure Storage provider (the engine and default backend of Durable
 *   Functions), as many fresh worker processes, one orchestration fanning out (a) one activity per item and (b) one
 *   activity per unit of the app's unit size, each doing the group-by kind's work, the orchestration merging the
 *   partial results (./peer/dotnet, built here with `dotnet build`, packages restored from NuGet).
 * Who goes first alternates by round. Every storage request of both sides goes through one counting proxy in front of
 * Azurite (scripts/support/countingProxy.ts) and is priced with one price table (./throughput/cost.ts). Prints,
 * writes JSON.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { dirname, join, resolve } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { readSettings } from "../../../src/app/settings";
import { ensureAppStorage } from "../../../dev/src/local/storageSetup";
import { startAzurite, type Azurite } from "../../../dev/src/local/azurite";
import { machineInfo, uploadInputBlobs } from "./benchSetup";
import { DEFAULT_SCHEDULE } from "./throughput/cli";
import { PRICES, PRICES_NOTE } from "./throughput/cost";
import { runProject, TAIL_MS } from "./throughput/projectRun";
import { scenarioJob, type ScenarioJob, type ScenarioName } from "./throughput/scenarios";
import { appUnitItems } from "./throughput/units";
import { parsePeerArgs, USAGE, UsageError, type PeerArgs } from "./peer/cli";
import { startCountingProxy, type CountingProxy } from "../../support/countingProxy";
import { buildPeer, killPeerProcesses, runDurableTask, type PeerVariant } from "./peer/dotnetPeer";
import { priceRun, requestsByOperation } from "./peer/pricing";
import { checkTargets, roundRatios, summarize, type PeerSample, type Side } from "./peer/report";
import { PEER_SETTINGS } from "./peer/settings";

const REPO_ROOT = resolve(__dirname, "..", "..", "..");
const MAX_WAIT_S = 1800;
let azurite: Azurite | undefined;
let proxy: CountingProxy | undefined;
const load = (): number => Math.round((loadavg()[0] ?? 0) * 100) / 100;

async function main(): Promise<number> {
  let args: PeerArgs;
  try {
    args = parsePeerArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`bench:peer: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const controller = new AbortController();
  const aborted = (): boolean => controller.signal.aborted;
  process.on("SIGINT", () => controller.abort());
  const startedAt = new Date();
  const loadAtStart = load();
  const outputDir = join(REPO_ROOT, ".local", `peer-${startedAt.toISOString().replace(/[:.]/g, "-")}`);
  mkdirSync(outputDir, { recursive: true });
  if (!args.projectOnly) {
    console.log("Restoring and building the .NET harness (dotnet build)…");
    buildPeer();
  }
  azurite = await startAzurite({ persistent: true });
  proxy = await startCountingProxy(azurite);
  const direct = `${azurite.connectionString}TableEndpoint=http://127.0.0.1:${azurite.tablePort}/devstoreaccount1;`;
  const settings = readSettings({});
  await ensureAppStorage(azurite.connectionString, settings);
  const jobs: Record<ScenarioName, ScenarioJob> = {
    small: scenarioJob("small", args.smallItems, "bench/small"),
    blob: scenarioJob("blob", args.blobItems, "bench/blob"),
    short: scenarioJob("short", args.shortItems, "bench/short"),
  };
  const inputs = BlobServiceClient.fromConnectionString(azurite.connectionString).getContainerClient(
    settings.INPUT_CONTAINER,
  );
  if (args.scenarios.includes("blob")) await uploadInputBlobs(inputs, jobs.blob.blobs);
  console.log(
    `Azurite blob :${azurite.blobPort} queue :${azurite.queuePort} table :${azurite.tablePort}, behind a counting proxy. ${args.rounds} round(s), ${args.instances} instances / workers, ${args.partitions} partitions. Load average ${loadAtStart}. Output ${outputDir}.`,
  );

  const runSide = async (side: Side, scenario: ScenarioName, roundNo: number, order: number, counted = true) => {
    const job = jobs[scenario];
    const unitItems = appUnitItems(settings, job.items);
    const before = load();
    const label = `${scenario}-r${roundNo}${counted ? "" : "-warm-up"}`;
    if (side === "project") {
      const run = await runProject({
        connectionString: proxy?.appConnectionString ?? "",
        // The status polls reach Azurite directly, as the framework's client waits: not the job's requests.
        pollConnectionString: azurite?.connectionString ?? "",
        job,
        instances: args.instances,
        schedule: DEFAULT_SCHEDULE,
        outputDir,
        label,
        maxWaitS: MAX_WAIT_S,
        peakRss: true,
        abortSignal: controller.signal,
        log: console.log,
      });
      const requests = proxy?.between(run.countWindow.fromMs, run.countWindow.toMs) ?? [];
      const executions = Object.values(run.executions).reduce((sum, count) => sum + count, 0);
      const leaders = run.instances.filter((instance) => instance.termsLed > 0);
      const sample: PeerSample = {
        round: roundNo,
        order,
        ok: run.ok,
        ...(run.problem === undefined ? {} : { problem: run.problem }),
        items: run.items,
        completionS: run.submitToCompletedS,
        itemsPerS: run.itemsPerS,
        price: priceRun(requests, executions, run.items),
        executions: run.executions,
        peakMemoryMiB: Math.max(0, ...leaders.map((instance) => instance.peakRssMiB ?? 0)) || undefined,
        cpuS: run.instances.reduce((sum, instance) => sum + (instance.cpuS ?? 0), 0),
        loadAverage1m: [before, load()],
        requests: requestsByOperation(requests),
        extra: {
          policyCountedRequestsPerItem:
            Math.round((run.counts.reduce((sum, count) => sum + count.requests, 0) / run.items) * 10_000) / 10_000,
          instancesPeakRssMiB: run.instances.map((instance) => instance.peakRssMiB),
        },
      };
      proxy?.forget(Date.now());
      return sample;
    }
    const variant: PeerVariant = side === "perItem" ? "per-item" : "batched";
    const hub = `peer${scenario}${side === "perItem" ? "item" : "unit"}r${roundNo}${counted ? "" : "w"}`;
    const run = await runDurableTask({
      connectionString: proxy?.connectionString ?? "",
      directConnectionString: direct,
      job,
      inputContainer: settings.INPUT_CONTAINER,
      variant,
      unitItems,
      workers: args.instances,
      partitions: args.partitions,
      hub,
      outputDir,
      settleMs: args.settleS * 1000,
      maxWaitS: MAX_WAIT_S,
    });
    const requests =
      run.startMs === undefined ? [] : (proxy?.between(run.startMs, (run.completedMs ?? Date.now()) + TAIL_MS) ?? []);
    const sample: PeerSample = {
      round: roundNo,
      order,
      ok: run.ok,
      ...(run.problem === undefined ? {} : { problem: run.problem }),
      items: job.items.length,
      completionS: run.completionS,
      itemsPerS: run.completionS === undefined ? undefined : job.items.length / run.completionS,
      price: priceRun(requests, run.episodes + run.activities, job.items.length),
      executions: { orchestratorEpisodes: run.episodes, activities: run.activities },
      peakMemoryMiB: Math.max(0, ...run.workersPeakRssMiB) || undefined,
      cpuS: run.workersCpuS,
      loadAverage1m: [before, load()],
      requests: requestsByOperation(requests, hub),
      extra: { workersPeakRssMiB: run.workersPeakRssMiB, unitItems: variant === "per-item" ? 1 : unitItems },
    };
    proxy?.forget(Date.now());
    return sample;
  };

  // Warm-up, not counted: Azurite's code and the .NET runtime's first start.
  console.log("Warm-up (not counted): the short job through the project and the framework's batched variant…");
  await runSide("project", "short", 0, 1, false);
  if (!args.projectOnly) await runSide("batched", "short", 0, 2, false);

  const samples: Record<ScenarioName, Record<Side, PeerSample[]>> = {
    small: { project: [], perItem: [], batched: [] },
    blob: { project: [], perItem: [], batched: [] },
    short: { project: [], perItem: [], batched: [] },
  };
  for (let roundNo = 1; roundNo <= args.rounds && !aborted(); roundNo++) {
    for (const scenario of args.scenarios) {
      const peers: Side[] = args.projectOnly
        ? []
        : jobs[scenario].items.length <= args.perItemMaxItems
          ? ["batched", "perItem"]
          : ["batched"];
      // Odd rounds the project first, even rounds the framework first.
      const order: Side[] = roundNo % 2 === 1 ? ["project", ...peers] : [...peers, "project"];
      for (const [index, side] of order.entries()) {
        if (aborted()) break;
        console.log(`[round ${roundNo}] ${scenario} / ${side}: ${jobs[scenario].items.length} items (load ${load()})…`);
        const sample = await runSide(side, scenario, roundNo, index + 1);
        samples[scenario][side].push(sample);
        console.log(
          `[round ${roundNo}] ${scenario} / ${side}: ${sample.ok ? "ok" : `FAILED (${sample.problem ?? "?"})`} — ${sample.itemsPerS?.toFixed(1) ?? "—"} items/s, ${sample.completionS?.toFixed(2) ?? "—"} s, ${sample.price.requestsPerItem.total} requests/item (blob ${sample.price.requestsPerItem.blob}, queue ${sample.price.requestsPerItem.queue}, table ${sample.price.requestsPerItem.table}), $${sample.price.usdPerMillion}/M, peak ${sample.peakMemoryMiB ?? "—"} MiB`,
        );
      }
    }
  }

  const scenarios = Object.fromEntries(
    args.scenarios.map((scenario) => {
      const perItem = samples[scenario].perItem;
      const durableTask = {
        batched: summarize(samples[scenario].batched),
        ...(perItem.length > 0 ? { perItem: summarize(perItem) } : {}),
      };
      return [
        scenario,
        {
          items: jobs[scenario].items.length,
          unitItems: appUnitItems(settings, jobs[scenario].items),
          project: summarize(samples[scenario].project),
          durableTask,
          ...(perItem.length > 0
            ? {}
            : {
                perItemSkipped: `more than --per-item-max-items ${args.perItemMaxItems} items: one activity per item runs at a few items a second here`,
              }),
          ratiosPerRound: [
            ...roundRatios(samples[scenario].project, samples[scenario].batched, "batched"),
            ...roundRatios(samples[scenario].project, perItem, "perItem"),
          ],
        },
      ];
    }),
  ) as Record<
    string,
    { project: ReturnType<typeof summarize>; durableTask: Record<string, ReturnType<typeof summarize>> }
  >;
  const targets = checkTargets(scenarios.small, scenarios.short);
  const report = {
    scenarios,
    targets,
    prices: { ...PRICES, note: PRICES_NOTE },
    config: {
      rounds: args.rounds,
      items: { small: args.smallItems, blob: args.blobItems, short: args.shortItems },
      instances: args.instances,
      order:
        "after an uncounted warm-up (the short job through each side); odd rounds the project first in each scenario, even rounds the framework first",
      durableTask: { ...PEER_SETTINGS, partitionCount: args.partitions, settleS: args.settleS },
      counting:
        "every blob, queue and table request of both sides through one counting HTTP proxy in front of Azurite; the project from its submission's start to 400 ms after the last invocation it caused (bench:throughput's window, ./throughput/projectRun.ts), the framework from the orchestration's creation to 400 ms after its CompletedTime; not counted: setup (queues, tables, containers, input blobs), the benchmark's status polls (the framework's client waits through a direct connection)",
      executions:
        "project: the host's function executions in its window; framework: orchestrator episodes and activities (each billed by Durable Functions as a function execution), counted by dispatcher middleware in the workers",
      timing:
        "project: the submission's start → the leader's completedAt; framework: the client's CreateOrchestrationInstanceAsync start → the orchestration's CompletedTime",
      memory:
        "project: VmHWM of the instance that led (the whole process, since its start); framework: the largest VmHWM of the workers (the one that held the orchestration)",
    },
    machine: machineInfo({ start: loadAtStart, end: load() }),
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
  };
  const outPath = resolve(process.cwd(), args.out);
  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(outPath, `${JSON.stringify(report, null, 2)}\n`);
  console.log("");
  for (const [scenario, entry] of Object.entries(scenarios)) {
    console.log(`${scenario}:`);
    for (const [name, summary] of [
      ["project", entry.project],
      ...Object.entries(entry.durableTask).map(([variant, s]) => [`durableTask ${variant}`, s] as const),
    ] as const)
      console.log(
        `  ${name.padEnd(22)} ${summary.itemsPerS ?? "—"} items/s, ${summary.completionS ?? "—"} s, ${summary.requestsPerItem.total ?? "—"} requests/item (blob ${summary.requestsPerItem.blob ?? "—"}, queue ${summary.requestsPerItem.queue ?? "—"}, table ${summary.requestsPerItem.table ?? "—"}), $${summary.usdPerMillion ?? "—"}/M, peak ${summary.peakMemoryMiB ?? "—"} MiB${summary.failed > 0 ? `, ${summary.failed} FAILED` : ""}`,
      );
  }
  for (const target of targets)
    console.log(
      `Target ${target.name} ${target.target}: project ${target.project ?? "—"}, framework's best (${target.peerBestVariant ?? "—"}) ${target.peerBest ?? "—"}, ratio ${target.ratio ?? "—"} — ${target.met ? "met" : "NOT met"}`,
    );
  console.log(`\nReport: ${outPath}`);
  const failed = Object.values(samples).some((sides) => Object.values(sides).some((list) => list.some((s) => !s.ok)));
  return aborted() ? 130 : failed ? 1 : 0;
}

async function cleanUp(): Promise<void> {
  killPeerProcesses();
  await proxy?.close().catch(() => undefined);
  await azurite?.stop().catch(() => undefined);
}

process.once("exit", () => killPeerProcesses());
main().then(
  async (code) => {
    await cleanUp();
    process.exit(code);
  },
  async (error: unknown) => {
    console.error(`bench:peer failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    await cleanUp();
    process.exit(1);
  },
);
