/**
 * `npm run bench:instance`: the CPU one instance process of the real app (local host, host.json's queue settings)
 * spends working a job's units — its first job after starting, and the jobs after it — against one worker process of
 * the batched loop (./throughput/baselineSession.ts: the raw SDKs, the same unit messages, nothing else) given the same
 * jobs, job by job in pairs, alternating who goes first; `workerCpuRatioVsLoop` is the app's warm jobs' median CPU over
 * the loop's (issue 35's target: at most 1.3×), also reported run by run. The app runs compiled, as in Azure
 * (./compiledApp.ts: `npm run build` first when dist/ is stale; `--from-sources` for tsx), with the Node flags it is
 * deployed with (`languageWorkers__node__arguments`, NODE_WORKER_ARGUMENTS: none since issue 35); `--also` adds flag
 * sets. The loop's worker runs under tsx's loader (benchmark code, not in the package): esbuild's output of the same
 * sources, loaded once; after loading, plain JS as well.
 * The benchmark process is the leader: it holds the lease for the whole run, one step per job that dispatches and folds
 * (so the instance's wake-ups find it held and never lead), takeover is off, and the instance's timer never fires.
 * What `bench:throughput` cannot separate: there three instances, a leader and Azurite share two cores, and every run
 * starts fresh processes.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createCoordinatorApp, type Sink } from "../../../src/app/context";
import { readSettings } from "../../../src/app/settings";
import { coordinationDeps, getJobStatus, submitJob } from "../../../src/app/operations";
import { runCoordinationStep } from "../../../src/coordination/step";
import { delay } from "../../../src/library/util/delay";
import { silentLogger } from "../../../src/library/util/logger";
import { InstanceProcess, NODE_WORKER_ARGUMENTS, type InstanceHandlers } from "../../../src/local/instances";
import { instanceEnv, waitForReady } from "../../../src/local/startup";
import { ensureAppStorage } from "../../../src/local/storageSetup";
import { startAzurite, type Azurite } from "../../../src/local/azurite";
import { numberFlag, parseFlags, pathFlag, UsageError } from "../../../src/cli/flags";
import { readCpuTimes } from "./throughput/cpuTimes";
import { median } from "./throughput/report";
import { scenarioJob } from "./throughput/scenarios";
import { REPO_APP } from "../../support/repoApp";
import { startLoopSession, type LoopSession } from "./throughput/baselineSession";
import { COMPILED_APP, compiledInstanceProcess, ensureBuild } from "./compiledApp";
import { appUnitItems } from "./throughput/units";

const USAGE = `Usage: npm run bench:instance -- [--items 20000] [--jobs 5] [--runs 3] [--also="FLAGS"] [--from-sources] [--out FILE]

Times the CPU of one instance process of the app working a job of small CSV items (bench:throughput's small scenario),
compiled (npm run build, run first when dist/ is missing or stale) and with the Node flags the app is deployed with,
against one worker process of the batched loop on the same units: each run starts a fresh instance and a fresh loop
worker and gives them --jobs jobs in pairs, who goes first alternating (each side's first job is its first; the others
find it warm). Reports workerCpuRatioVsLoop: the app's warm jobs' median CPU ÷ the loop's, and the same ratio by run.

Options:
  --items N    small items per job, 1000–200000 (default 20000)
  --jobs N     jobs per run, 2–20 (default 5)
  --runs N     runs per flag set, alternating, 1–10 (default 3)
  --also=FLAGS another set of Node flags for the app, timed beside it, e.g. --also="--max-semi-space-size=4" (up to 3)
  --from-sources  run the app's instance from its TypeScript sources under tsx (as before issue 35's item 5) instead
               of the compiled build
  --out FILE   where to write the JSON report (default bench-results/instance.json)`;

/** The instance's timer: once a year, so only the benchmark's own steps lead. */
const NEVER_SCHEDULE = "0 0 0 1 1 *";
/** After a job completes, its last deletes and wake-ups are counted before the CPU is read. */
const SETTLE_MS = 500;
/** Between jobs the instance idles this long: its queue trigger backs off to host.json's 2 s. */
const IDLE_MS = 2000;

interface FlagSet {
  name: string;
  nodeArguments: string;
}

interface Args {
  items: number;
  jobs: number;
  runs: number;
  flagSets: FlagSet[];
  out: string;
  /** Run the app's instance from TypeScript sources under tsx instead of the compiled build. */
  fromSources: boolean;
}

/** Node flags as `languageWorkers__node__arguments` holds them: options only, each `--name` or `--name=value`. */
const NODE_FLAGS = /^--[a-z0-9-]+(=[A-Za-z0-9._,:-]+)?(\s+--[a-z0-9-]+(=[A-Za-z0-9._,:-]+)?)*$/;

function alsoFlag(raw: readonly string[] | undefined): FlagSet[] {
  const sets = raw ?? [];
  if (sets.length > 3) throw new UsageError(`--also is given ${sets.length} times; at most 3 are allowed.`);
  return sets.map((text) => {
    const nodeArguments = text.trim();
    if (nodeArguments.length > 200 || !NODE_FLAGS.test(nodeArguments))
      throw new UsageError(
        `--also "${text.slice(0, 80)}" is not a list of Node options (each --name or --name=value, at most 200 characters).`,
      );
    return { name: nodeArguments, nodeArguments };
  });
}

function parse(argv: string[]): Args | undefined {
  const values = parseFlags(argv, {
    items: { type: "string" },
    jobs: { type: "string" },
    runs: { type: "string" },
    also: { type: "string", multiple: true },
    out: { type: "string" },
    "from-sources": { type: "boolean" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help === true) return undefined;
  return {
    items: numberFlag(values.items, "--items", { min: 1000, max: 200_000 }) ?? 20_000,
    jobs: numberFlag(values.jobs, "--jobs", { min: 2, max: 20 }) ?? 5,
    runs: numberFlag(values.runs, "--runs", { min: 1, max: 10 }) ?? 3,
    flagSets: [...FLAG_SETS, ...alsoFlag(values.also)],
    out: pathFlag(values.out, "--out") ?? "bench-results/instance.json",
    fromSources: values["from-sources"] === true,
  };
}

/** The app as deployed, and the loop (its flags: the benchmark's Node's, unused by the name). */
const DEPLOYED = "deployed";
const LOOP = "loop";
const FLAG_SETS: readonly FlagSet[] = [
  { name: DEPLOYED, nodeArguments: NODE_WORKER_ARGUMENTS },
  { name: LOOP, nodeArguments: "" },
];

interface Run {
  flagSet: string;
  /** The run (from 1) and the app's flag set it was paired with: the loop's side names the app's. */
  run: number;
  pairedWith: string;
  /** CPU of the instance per job, ms, in order: the first is its first job. */
  jobsCpuMs: number[];
  /** The job's step, from its start (the first dispatch) to the job's completion, ms. */
  jobsMs: number[];
}

/** a ÷ b to two decimals; undefined without both. */
function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b <= 0 ? undefined : Math.round((a / b) * 100) / 100;
}

const quiet: Sink = { logger: silentLogger, emit: () => undefined };

/** A process's CPU time so far (user + system, every thread), ms; Linux only. */
function cpuMsOf(pid: number | undefined): number {
  const times = pid === undefined ? undefined : readCpuTimes(pid);
  if (times === undefined) throw new Error("The instance's CPU time cannot be read (is it still running?).");
  return Math.round(times.cpuS * 1000);
}

/** The app's side of a run: a fresh instance process, and the benchmark's leader that gives it its jobs. */
async function startApp(azurite: Azurite, args: Args, flagSet: FlagSet, setIndex: number, runIndex: number) {
  const { env, settings } = instanceEnv(
    { ...process.env, languageWorkers__node__arguments: flagSet.nodeArguments },
    azurite.connectionString,
    NEVER_SCHEDULE,
  );
  // Fresh container and queue names per run: nothing of an earlier run is left for this one.
  const suffix = `${runIndex}s${setIndex}`;
  const names = {
    LEASE_CONTAINER: `leases-bi${suffix}`,
    STATE_CONTAINER: `state-bi${suffix}`,
    INPUT_CONTAINER: `inputs-bi${suffix}`,
    SYSTEM_CONTAINER: `system-bi${suffix}`,
    WORK_QUEUE: `work-bi${suffix}`,
    RESULTS_QUEUE: `results-bi${suffix}`,
    WAKE_QUEUE: `wake-bi${suffix}`,
  };
  // Takeover off: the instance would otherwise take the lease from the benchmark whenever a submission or a leader
  // step held the benchmark's event loop past LEASE_TAKEOVER_DEADLINE_MS (it did, once, on this 2-core machine).
  const runEnv = { ...env, ...names, LEASE_TAKEOVER_DEADLINE_MS: "0" };
  await ensureAppStorage(azurite.connectionString, { ...settings, ...names });
  const handlers: InstanceHandlers = {
    onEvent: () => undefined,
    onLog: () => undefined,
    onReady: () => undefined,
    onExit: () => undefined,
  };
  // Compiled JS under plain Node, as in Azure (./compiledApp.ts); with --from-sources, TypeScript under tsx.
  const Instance = args.fromSources ? InstanceProcess : compiledInstanceProcess();
  const appFiles = args.fromSources ? REPO_APP : COMPILED_APP;
  const instance = new Instance("instance-1", { ...appFiles, ...runEnv }, handlers);
  const leader = createCoordinatorApp({ ...runEnv, WEBSITE_INSTANCE_ID: "bench-instance-leader" });
  return { instance, leader };
}

/**
 * One run: a fresh instance of the app and a fresh loop worker, both started, given the same jobs one pair at a time
 * — the app's job 1 and the loop's job 1, then both jobs 2, who goes first alternating by job and by run — so that
 * the machine's load, which moves over seconds on a shared machine, weighs on both sides of each pair alike.
 */
async function pairedRun(
  azurite: Azurite,
  args: Args,
  flagSet: FlagSet,
  setIndex: number,
  runIndex: number,
): Promise<[Run, Run]> {
  const { instance, leader } = await startApp(azurite, args, flagSet, setIndex, runIndex);
  const pair = { run: runIndex + 1, pairedWith: flagSet.name };
  const app: Run = { flagSet: flagSet.name, ...pair, jobsCpuMs: [], jobsMs: [] };
  const loop: Run = { flagSet: LOOP, ...pair, jobsCpuMs: [], jobsMs: [] };
  const settings = readSettings({});
  let session: LoopSession | undefined;
  try {
    await ensureAppStorage(azurite.connectionString, settings);
    session = await startLoopSession({
      connectionString: azurite.connectionString,
      inputContainer: settings.INPUT_CONTAINER,
      label: `instance-${runIndex}-${setIndex}`,
      countsPrefix: join(tmpdir(), `bench-instance-${process.pid}`),
      workers: 1,
    });
    const loopSession = session;
    await waitForReady([instance], undefined);
    // One term for the whole run: the instance's wake-ups (sent as its units finish) always find the lease held, so it
    // never leads, between jobs either. Each job gets a step of its own within the term.
    const led = await leader.elector.tryLead(async (term) => {
      const appJob = async (index: number): Promise<void> => {
        const job = scenarioJob("small", args.items, "unused", 20_260_501 + index);
        const submitted = await submitJob(
          leader,
          { kind: job.kind, params: job.params, items: job.items },
          { wake: false },
        );
        if (!submitted.ok) throw new Error(`The job was refused: ${JSON.stringify(submitted.errors)}`);
        // The instance idles before each job (its queue polling backs off), as between a deployed app's jobs.
        term.reportProgress();
        await delay(IDLE_MS, { abortSignal: term.signal });
        term.reportProgress();
        const before = cpuMsOf(instance.state.pid);
        const startedMs = performance.now();
        // Dispatches the job and folds its results until it completes.
        await runCoordinationStep(coordinationDeps(leader, quiet), term, { budgetMs: 120_000 });
        const status = await getJobStatus(leader, submitted.id);
        if (status?.status !== "completed")
          throw new Error(`Job ${index + 1} did not complete in its step (${status?.status ?? "?"}).`);
        app.jobsMs.push(performance.now() - startedMs);
        await delay(SETTLE_MS, { abortSignal: term.signal });
        app.jobsCpuMs.push(cpuMsOf(instance.state.pid) - before);
        term.reportProgress();
      };
      const loopJob = async (index: number): Promise<void> => {
        const job = scenarioJob("small", args.items, "unused", 20_260_501 + index);
        await delay(IDLE_MS, { abortSignal: term.signal });
        const limits = { maxItems: appUnitItems(settings, job.items), maxBytes: settings.WORK_UNIT_MAX_BYTES };
        const { cpuMs, ms } = await loopSession.runJob(job, limits, {
          settleMs: SETTLE_MS,
          abortSignal: term.signal,
        });
        loop.jobsCpuMs.push(cpuMs);
        loop.jobsMs.push(ms);
        term.reportProgress();
      };
      for (let index = 0; index < args.jobs; index++) {
        const order = (index + runIndex) % 2 === 0 ? [appJob, loopJob] : [loopJob, appJob];
        for (const side of order) await side(index);
      }
    });
    if (led.outcome === "aborted")
      throw new Error(
        `The benchmark's term ended before its jobs did (${led.reason}${led.error === undefined ? "" : `: ${led.error instanceof Error ? led.error.message : JSON.stringify(led.error)}`}).`,
      );
    if (led.outcome !== "completed") throw new Error(`The benchmark could not lead: ${led.outcome}.`);
  } finally {
    await Promise.all([instance.stop(35_000), session?.stop()]);
  }
  return [app, loop];
}

async function main(): Promise<number> {
  let args: Args | undefined;
  try {
    args = parse(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`bench:instance: ${error.message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args === undefined) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (process.platform !== "linux") {
    process.stderr.write("bench:instance reads CPU times from /proc: Linux only.\n");
    return 2;
  }
  process.stdout.write(
    `Instance benchmark: ${args.runs} runs per flag set, ${args.jobs} jobs of ${args.items} small items each (load average ${loadavg()[0]?.toFixed(1)}).\n`,
  );
  const azurite = await startAzurite();
  const runs: Run[] = [];
  const byRun: { run: number; flagSet: string; appWarmCpuMs: number; loopWarmCpuMs: number; ratio?: number }[] = [];
  const appSets = args.flagSets.filter((flagSet) => flagSet.name !== LOOP);
  try {
    if (!args.fromSources) ensureBuild((line) => process.stdout.write(`${line}\n`));
    for (let runIndex = 0; runIndex < args.runs; runIndex++)
      for (const flagSet of runIndex % 2 === 0 ? appSets : [...appSets].reverse()) {
        const [app, loop] = await pairedRun(azurite, args, flagSet, args.flagSets.indexOf(flagSet), runIndex);
        runs.push(app, loop);
        const appWarmCpuMs = median(app.jobsCpuMs.slice(1)) ?? 0;
        const loopWarmCpuMs = median(loop.jobsCpuMs.slice(1)) ?? 0;
        byRun.push({
          run: runIndex + 1,
          flagSet: flagSet.name,
          appWarmCpuMs,
          loopWarmCpuMs,
          ratio: ratio(appWarmCpuMs, loopWarmCpuMs),
        });
        for (const side of [app, loop])
          process.stdout.write(
            `  run ${runIndex + 1}, ${side.flagSet.padEnd(13)} CPU per job, ms: ${side.jobsCpuMs.join(", ")} (job times ${side.jobsMs.map((ms) => (ms / 1000).toFixed(2)).join(", ")} s)\n`,
          );
        process.stdout.write(
          `  run ${runIndex + 1}, ${flagSet.name} ÷ loop, warm medians: ${ratio(appWarmCpuMs, loopWarmCpuMs) ?? "n/a"}× (load average ${loadavg()[0]?.toFixed(1)})\n`,
        );
      }
  } finally {
    await azurite.stop();
  }
  const summary = args.flagSets.map((flagSet) => {
    const of = runs.filter((run) => run.flagSet === flagSet.name);
    const first = median(of.map((run) => run.jobsCpuMs[0] ?? 0)) ?? 0;
    const warm = median(of.flatMap((run) => run.jobsCpuMs.slice(1))) ?? 0;
    return {
      flagSet: flagSet.name,
      nodeArguments: flagSet.nodeArguments,
      firstJobCpuMs: first,
      warmJobCpuMs: warm,
      firstJobUsPerItem: Math.round((first * 1000 * 10) / args.items) / 10,
      warmJobUsPerItem: Math.round((warm * 1000 * 10) / args.items) / 10,
    };
  });
  const loop = summary.find((row) => row.flagSet === LOOP);
  const deployed = summary.find((row) => row.flagSet === DEPLOYED);
  /** Issue 35: the app's worker path, warm, against the loop's worker on the same units; target at most 1.3×. */
  const workerCpuRatioVsLoop = ratio(deployed?.warmJobCpuMs, loop?.warmJobCpuMs);
  // Each warm job's pair (the app's job and the loop's, back to back): the ratio least moved by the machine's load.
  const pairRatios = byRun
    .filter((row) => row.flagSet === DEPLOYED)
    .flatMap((row) => {
      const [app, loopRun] = runs.filter((run) => run.run === row.run && run.pairedWith === DEPLOYED);
      return (app?.jobsCpuMs ?? []).slice(1).map((cpuMs, index) => ratio(cpuMs, loopRun?.jobsCpuMs[index + 1]) ?? 0);
    });
  const overLoop = summary
    .filter((row) => row.flagSet !== LOOP)
    .map((row) => ({
      flagSet: row.flagSet,
      firstJob: ratio(row.firstJobCpuMs, loop?.firstJobCpuMs),
      laterJobs: ratio(row.warmJobCpuMs, loop?.warmJobCpuMs),
    }));
  const report = {
    benchmark: "instance",
    command: `npm run bench:instance -- ${process.argv.slice(2).join(" ")}`.trim(),
    at: new Date().toISOString(),
    node: process.version,
    machine: { cpus: availableParallelism(), loadAverage1m: Math.round((loadavg()[0] ?? 0) * 100) / 100 },
    items: args.items,
    jobs: args.jobs,
    runs: args.runs,
    app: args.fromSources ? "TypeScript sources under tsx (--from-sources)" : "compiled (npm run build), plain Node",
    medianOf: "runs (first job), every later job of every run (warm)",
    summary,
    workerCpuRatioVsLoop,
    workerCpuRatioTarget: 1.3,
    /** The same ratio within each run (its own warm medians): how much it moves from run to run. */
    workerCpuRatioByRun: byRun,
    /** The median of the warm jobs' pairs' ratios (app ÷ loop, job by job). */
    workerCpuRatioPairsMedian: median(pairRatios),
    overLoop,
    runsDetail: runs,
  };
  const out = resolve(process.cwd(), args.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  for (const row of summary)
    process.stdout.write(
      `${row.flagSet.padEnd(13)} [${row.nodeArguments}]: first job ${row.firstJobCpuMs} ms (${row.firstJobUsPerItem} µs per item), later jobs ${row.warmJobCpuMs} ms (${row.warmJobUsPerItem} µs per item)\n`,
    );
  for (const row of overLoop)
    process.stdout.write(
      `${row.flagSet} ÷ the loop's worker: first job ${row.firstJob ?? "n/a"}×, later jobs ${row.laterJobs ?? "n/a"}×\n`,
    );
  process.stdout.write(
    `by run: ${byRun.map((row) => `${row.ratio ?? "n/a"}×`).join(", ")}; median of the warm pairs ${median(pairRatios) ?? "n/a"}×; workerCpuRatioVsLoop ${workerCpuRatioVsLoop ?? "n/a"} (target ≤ 1.3: ${workerCpuRatioVsLoop !== undefined && workerCpuRatioVsLoop <= 1.3 ? "met" : "NOT met"})\n`,
  );
  process.stdout.write(`Report: ${out}\n`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `bench:instance failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
