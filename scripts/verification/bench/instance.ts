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
import { availableParallelism, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { NODE_WORKER_ARGUMENTS } from "../../../dev/src/local/instances";
import { startAzurite } from "../../../dev/src/local/azurite";
import { numberFlag, parseFlags, pathFlag, UsageError } from "../../../src/cli/flags";
import { ensureBuild } from "./compiledApp";
import { LOOP, pairedRun, type FlagSet, type Run } from "./instancePairs";
import { median } from "./throughput/report";

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
const FLAG_SETS: readonly FlagSet[] = [
  { name: DEPLOYED, nodeArguments: NODE_WORKER_ARGUMENTS },
  { name: LOOP, nodeArguments: "" },
];

/** a ÷ b to two decimals; undefined without both. */
function ratio(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined || b <= 0 ? undefined : Math.round((a / b) * 100) / 100;
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
