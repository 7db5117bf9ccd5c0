/**
 * Flow control (issue 42): `npm run bench:limits -- [--out FILE] [--only small-job,duplicates,window] …` (see
 * ./limits/cli.ts for every flag).
 *
 * One run, one module a measurement (./limits/): each returns its figures for one JSON report and prints its table.
 * Those that need the real app share one cluster — a persistent Azurite and N instance processes of this repository's
 * app on the local host at the app's defaults (./limits/cluster.ts), started once, when the first of them runs.
 * - ./limits/smallJobLatency.ts — (a) a small job beside a large one of equal priority, against the idle coordinator;
 * - ./limits/duplicateSubmits.ts — (b) concurrent submits with one idempotency key: jobs made;
 * - ./limits/windowModel.ts — the shared dispatch window against one per job, on the leader's real step in process;
 * - ./limits/sustained.ts — utilisation of a sustained limited job, and storage requests per item with limits on and
 *   off (its own cluster, behind a counting proxy).
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { setMaxListeners } from "node:events";
import { loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { machineInfo, readBenchArgs } from "./benchSetup";
import { parseLimitsArgs, USAGE } from "./limits/cli";
import { BenchCluster } from "./limits/cluster";
import { duplicateSubmits } from "./limits/duplicateSubmits";
import type { BenchContext, Measurement } from "./limits/measurement";
import { smallJobLatency } from "./limits/smallJobLatency";
import { sustained } from "./limits/sustained";
import { windowModel } from "./limits/windowModel";

/** Every measurement, in the order they run (the in-process ones first: no cluster to wait for). */
const MEASUREMENTS: readonly Measurement<unknown>[] = [windowModel, sustained, smallJobLatency, duplicateSubmits];

const load = (): number => Math.round((loadavg()[0] ?? 0) * 100) / 100;

async function main(): Promise<number> {
  const args = readBenchArgs("bench:limits", parseLimitsArgs, USAGE);
  if (typeof args === "number") return args;
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  process.on("SIGINT", () => controller.abort());
  const startedAt = new Date();
  const loadAtStart = load();
  let cluster: BenchCluster | undefined;
  const context: BenchContext = {
    args,
    abortSignal: controller.signal,
    log: (line) => console.log(line),
    cluster: async () => {
      cluster ??= await BenchCluster.start({
        instances: args.instances,
        schedule: args.schedule,
        abortSignal: controller.signal,
      });
      return cluster;
    },
  };
  const results: Record<string, unknown> = {};
  const tables: string[] = [];
  try {
    for (const measurement of MEASUREMENTS.filter((m) => args.only.includes(m.name))) {
      console.log(`${measurement.name} (load average ${load()})…`);
      const result = await measurement.run(context);
      results[measurement.name] = result;
      tables.push(measurement.table(result));
      console.log(`\n${measurement.table(result)}\n`);
    }
  } finally {
    await cluster?.stop();
  }
  const report = {
    command: ["npm run bench:limits", ...(process.argv.length > 2 ? ["--", ...process.argv.slice(2)] : [])].join(" "),
    startedAt: startedAt.toISOString(),
    durationS: Math.round((Date.now() - startedAt.getTime()) / 1000),
    machine: machineInfo({ start: loadAtStart, end: load() }),
    instances: args.instances,
    schedule: args.schedule,
    appSettings: "the app's defaults",
    results,
  };
  const out = resolve(process.cwd(), args.out);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`Report: ${out}`);
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(`bench:limits failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    process.exitCode = 1;
  },
);
