/**
 * Lease benchmark: `npm run bench:lease -- [--rounds N] [--cost-seconds S] [--out FILE]` (./bench/cli.ts: the usage).
 *
 * On one Azurite, in one run, measures how fast leadership moves on — for this library (`LeaderElector` at its
 * defaults, "project", and with takeover as the app runs it, "takeover") and for a baseline that behaves like the
 * Leader Election pattern's C# sample (./bench/baselineMutex.ts) — with three contender processes per implementation,
 * each a real OS process (./bench/contender.ts):
 * - graceful handover: the leader is told to shut down and releases; time until another contender holds the lease;
 * - crash takeover: the leader process is SIGKILLed; time until another contender holds the lease.
 * Then what leadership costs with takeover and without (./bench/leadershipCost.ts). Prints progress and tables, and
 * writes a JSON report (`{ project: { gracefulHandoverS: { median, max }, … }, takeover: …, baseline: …, cost: … }`).
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { arch, cpus, platform, release, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { BlobLeaseStore } from "../../../src/library/index";
import { resolveElectorOptions } from "../../../src/library/leadership/options";
import { silenceNeededMs } from "../../../src/library/leadership/takeover";
import { formatCost, measureLeadershipCost } from "./lease/leadershipCost";
import { DEFAULT_PIPELINE_OPTIONS } from "../../../src/azure/clients";
import { BASELINE_PIPELINE_OPTIONS, BASELINE_TIMINGS } from "./lease/baselineMutex";
import { parseBenchArgs, USAGE, UsageError, type BenchArgs } from "./lease/cli";
import { ContenderGroup } from "./lease/ContenderGroup";
import { ContenderProcess, REPO_ROOT } from "./lease/ContenderProcess";
import { IMPLEMENTATIONS, LEASE_BLOB_NAME, type Implementation } from "./lease/protocol";
import { runRound, SCENARIOS, STEP_TIMEOUT_MS, type RoundSample, type Scenario } from "./lease/rounds";
import { formatTable, ratio, SCENARIO_KEYS, summarise, type ImplementationResults } from "./lease/summary";
import { startAzurite, type Azurite } from "../../../dev/src/local/azurite";

const CONTENDERS = 3;
/** Issue 9's targets for the project: graceful handover, and crash takeover beyond the lease duration, in s. */
const GRACEFUL_TARGET_S = 1.5;
const CRASH_MARGIN_S = 1.5;
/** Issue 22's targets with takeover: crash takeover median and max, graceful handover median, in s. */
const TAKEOVER_TARGETS = { crashMedianS: 4, crashMaxS: 6, gracefulMedianS: 0.3 } as const;

let azurite: Azurite | undefined;

async function main(): Promise<number> {
  let args: BenchArgs;
  try {
    args = parseBenchArgs(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`bench:lease: ${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    console.log(USAGE);
    return 0;
  }
  const outPath = resolve(process.cwd(), args.out);
  const startedAt = new Date();
  console.log(
    `Lease benchmark: ${args.rounds} round(s) per scenario and implementation, ${CONTENDERS} contender processes each; expect about ${Math.ceil((args.rounds * 80 + 20 + 2.2 * args.costSeconds) / 60)} min.`,
  );
  azurite = await startAzurite();
  const { connectionString } = azurite;
  console.log(`Azurite listening on blob port ${azurite.blobPort}.`);

  // The project's real defaults, read from the library rather than copied (no I/O: the client is never used).
  const defaults = resolveElectorOptions({
    store: new BlobLeaseStore(BlobServiceClient.fromConnectionString(connectionString)),
  });
  const project = {
    leaseDurationS: defaults.leaseDurationS,
    renewIntervalMs: defaults.renewIntervalMs,
    renewDeadlineMs: defaults.renewDeadlineMs,
    retryIntervalMs: defaults.retryIntervalMs,
    jitterRatio: defaults.jitterRatio,
    requestTimeoutMs: defaults.requestTimeoutMs,
  };
  const withTakeover = resolveElectorOptions({
    store: new BlobLeaseStore(BlobServiceClient.fromConnectionString(connectionString)),
    takeover: true,
  });
  const takeover = {
    ...project,
    takeover: true,
    heartbeatIntervalMs: withTakeover.heartbeatIntervalMs,
    takeoverDeadlineMs: withTakeover.takeoverDeadlineMs,
    clockDriftRatio: withTakeover.clockDriftRatio,
    takeoverMarginMs: withTakeover.takeoverMarginMs,
    silenceNeededMs: silenceNeededMs(withTakeover.takeoverDeadlineMs, withTakeover),
  };
  /** The longest periodic cycle of each implementation: a random hold over it puts the leader's exit anywhere in it. */
  const cycleMs: Record<Implementation, number> = {
    project: Math.max(project.renewIntervalMs, project.retryIntervalMs),
    takeover: Math.max(project.renewIntervalMs, project.retryIntervalMs, takeover.heartbeatIntervalMs),
    baseline: Math.max(BASELINE_TIMINGS.renewIntervalMs, BASELINE_TIMINGS.acquireAttemptIntervalMs),
  };

  const samples: Record<Implementation, Record<Scenario, RoundSample[]>> = {
    project: { graceful: [], crash: [] },
    takeover: { graceful: [], crash: [] },
    baseline: { graceful: [], crash: [] },
  };
  const anomalies: string[] = [];
  for (const scenario of SCENARIOS) {
    const groups = IMPLEMENTATIONS.map(
      (impl) => new ContenderGroup(impl, `bench-${impl}-${scenario}`, connectionString),
    );
    try {
      console.log(`[${scenario}] starting ${CONTENDERS} contenders per implementation…`);
      await Promise.all(
        groups.map(async (group) => {
          await Promise.all(Array.from({ length: CONTENDERS }, () => group.spawn(STEP_TIMEOUT_MS)));
          const leader = await group.currentLeader(STEP_TIMEOUT_MS);
          console.log(`[${scenario}] ${group.impl}: ${leader.id} leads.`);
        }),
      );
      for (let round = 1; round <= args.rounds; round++) {
        for (const group of groups) {
          const holdMs = 1_000 + Math.random() * cycleMs[group.impl];
          const sample = await runRound(group, scenario, round, holdMs);
          samples[group.impl][scenario].push(sample);
          const fromCommand =
            sample.fromCommandS === undefined ? "" : `, ${sample.fromCommandS.toFixed(2)} s from the command`;
          console.log(
            `[${scenario} ${round}/${args.rounds}] ${group.impl.padEnd(8)} ${sample.takeoverS.toFixed(2).padStart(6)} s  ${sample.oldLeader} -> ${sample.newLeader} (held ${sample.holdS.toFixed(1)} s${fromCommand})`,
          );
        }
      }
    } finally {
      await Promise.all(groups.map((group) => group.stop()));
      for (const group of groups) anomalies.push(...group.anomalies.map((text) => `${group.container}: ${text}`));
    }
  }

  const results: Record<Implementation, ImplementationResults> = {
    project: summarise(samples.project),
    takeover: summarise(samples.takeover),
    baseline: summarise(samples.baseline),
  };
  const ratiosOf = (impl: "project" | "takeover") => ({
    graceful: ratio(results.baseline.gracefulHandoverS, results[impl].gracefulHandoverS),
    crash: ratio(results.baseline.crashTakeoverS, results[impl].crashTakeoverS),
  });
  const ratios = { project: ratiosOf("project"), takeover: ratiosOf("takeover") };
  const targets = buildTargets(results, project.leaseDurationS);
  const cost =
    args.costSeconds > 0 ? await measureLeadershipCost(connectionString, args.costSeconds, console.log) : undefined;
  const finishedAt = new Date();
  const keyed = (impl: "project" | "takeover") => ({
    [SCENARIO_KEYS.graceful]: ratios[impl].graceful,
    [SCENARIO_KEYS.crash]: ratios[impl].crash,
  });
  const report = {
    project: results.project,
    takeover: results.takeover,
    baseline: results.baseline,
    /** baseline ÷ project: how many times longer the baseline takes. */
    ratio: keyed("project"),
    /** baseline ÷ takeover. */
    ratioTakeover: keyed("takeover"),
    targets,
    cost,
    rounds: args.rounds,
    anomalies,
    config: {
      contendersPerImplementation: CONTENDERS,
      order:
        "one Azurite; scenarios in sequence (graceful, then crash); within a scenario the rounds are interleaved (project, takeover, then baseline round), " +
        "the contenders of both implementations running throughout, each implementation in its own container",
      containers: Object.fromEntries(
        SCENARIOS.flatMap((scenario) =>
          IMPLEMENTATIONS.map((impl) => [`${impl}.${scenario}`, `bench-${impl}-${scenario}`]),
        ),
      ),
      blobName: LEASE_BLOB_NAME,
      round:
        "a fresh contender joins and reports ready; the leader is left alone for a random hold of 1 s + U(0, cycle); then it leaves " +
        "(graceful: told to shut down, it ends its term through its own cancellation path and releases, then exits; crash: SIGKILL), " +
        "so that exactly 3 contenders race for each takeover",
      holdCycleMs: cycleMs,
      measurement: {
        gracefulHandoverS:
          "next leader's term start (its task running) − old leader's release completed (the old leader's 'released' line)",
        gracefulHandoverFromCommandS: "next leader's term start − release command sent",
        crashTakeoverS: "next leader's term start − SIGKILL sent",
        clock: "Date.now() in each process, on one machine",
      },
      project: {
        ...project,
        readBeforeAcquire: true,
        epoch: true,
        storageRetryOptions: DEFAULT_PIPELINE_OPTIONS.retryOptions,
      },
      takeover: {
        ...takeover,
        readBeforeAcquire: true,
        epoch: true,
        storageRetryOptions: DEFAULT_PIPELINE_OPTIONS.retryOptions,
      },
      baseline: {
        imitates:
          "Leader Election pattern C# sample BlobDistributedMutex/BlobLeaseManager (github.com/mspnp/cloud-design-patterns, leader-election/DistributedMutex)",
        ...BASELINE_TIMINGS,
        jitterRatio: 0,
        readBeforeAcquire: false,
        epoch: false,
        storageRetryOptions: BASELINE_PIPELINE_OPTIONS.retryOptions,
      },
    },
    machine: {
      platform: platform(),
      release: release(),
      arch: arch(),
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? "unknown",
      totalMemoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
      node: process.version,
      azurite: packageVersion("azurite"),
      storageBlob: packageVersion("@azure/storage-blob"),
    },
    startedAt: startedAt.toISOString(),
    finishedAt: finishedAt.toISOString(),
    durationS: Math.round((finishedAt.getTime() - startedAt.getTime()) / 1000),
  };

  mkdirSync(dirname(outPath), { recursive: true });
  writeFileSync(outPath, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\n${formatTable(results, ratios)}\n`);
  console.log(
    `Targets (project, every round): graceful handover <= ${targets.gracefulHandoverS.limitS} s: ${verdict(targets.gracefulHandoverS.met)}; crash takeover <= ${targets.crashTakeoverS.limitS} s: ${verdict(targets.crashTakeoverS.met)}.`,
  );
  console.log(
    `Ahead of the baseline (median and max): graceful handover ${verdict(targets.aheadOfBaseline.gracefulHandoverS)}; crash takeover ${verdict(targets.aheadOfBaseline.crashTakeoverS)}.`,
  );
  const t = targets.takeover;
  console.log(
    `Targets with takeover: crash takeover median <= ${TAKEOVER_TARGETS.crashMedianS} s: ${verdict(t.crashMedianMet)}, max <= ${TAKEOVER_TARGETS.crashMaxS} s: ${verdict(t.crashMaxMet)}, ahead of the baseline (median and max): ${verdict(t.crashAheadOfBaseline)}; graceful handover median <= ${TAKEOVER_TARGETS.gracefulMedianS} s: ${verdict(t.gracefulMedianMet)}.`,
  );
  if (cost !== undefined)
    console.log(`\nWhat leadership costs (list prices; ${args.costSeconds} s per measurement):\n${formatCost(cost)}\n`);
  if (anomalies.length > 0) console.log(`Anomalies:\n  ${anomalies.join("\n  ")}`);
  console.log(`Report written to ${outPath} (${report.durationS} s).`);
  return 0;
}

function buildTargets(results: Record<Implementation, ImplementationResults>, leaseDurationS: number) {
  const { project, baseline } = results;
  const within = (figures: { median: number; max: number }, limitS: number) => ({
    limitS,
    medianMet: figures.median <= limitS,
    met: figures.max <= limitS,
  });
  const ahead = (p: { median: number; max: number }, b: { median: number; max: number }): boolean =>
    p.median < b.median && p.max < b.max;
  const { takeover } = results;
  return {
    gracefulHandoverS: within(project.gracefulHandoverS, GRACEFUL_TARGET_S),
    crashTakeoverS: within(project.crashTakeoverS, leaseDurationS + CRASH_MARGIN_S),
    aheadOfBaseline: {
      gracefulHandoverS: ahead(project.gracefulHandoverS, baseline.gracefulHandoverS),
      crashTakeoverS: ahead(project.crashTakeoverS, baseline.crashTakeoverS),
    },
    takeover: {
      ...TAKEOVER_TARGETS,
      crashMedianMet: takeover.crashTakeoverS.median <= TAKEOVER_TARGETS.crashMedianS,
      crashMaxMet: takeover.crashTakeoverS.max <= TAKEOVER_TARGETS.crashMaxS,
      crashAheadOfBaseline: ahead(takeover.crashTakeoverS, baseline.crashTakeoverS),
      gracefulMedianMet: takeover.gracefulHandoverS.median <= TAKEOVER_TARGETS.gracefulMedianS,
    },
  };
}

function verdict(met: boolean): string {
  return met ? "met" : "NOT met";
}

function packageVersion(name: string): string {
  const json: unknown = JSON.parse(readFileSync(join(REPO_ROOT, "node_modules", name, "package.json"), "utf8"));
  const version = typeof json === "object" && json !== null && "version" in json ? json.version : undefined;
  return typeof version === "string" ? version : "unknown";
}

async function stopEverything(): Promise<void> {
  ContenderProcess.killAll();
  const running = azurite;
  azurite = undefined;
  await running?.stop();
}

// A contender must never outlive the benchmark: kill them on any exit, and on Ctrl-C or a termination signal.
process.once("exit", () => {
  ContenderProcess.killAll();
});
for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
  ["SIGHUP", 129],
] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping the contenders and Azurite.`);
    void stopEverything().finally(() => process.exit(code));
  });
}

main()
  .then(async (code) => {
    await stopEverything();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    console.error(`bench:lease failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    await stopEverything().catch(() => undefined);
    process.exit(1);
  });
