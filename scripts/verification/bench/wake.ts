/**
 * Wake-up benchmark: `npm run bench:wake -- [--rounds N] [--schedule CRON] [--instances N] [--out FILE]`.
 *
 * On one Azurite, N instance processes of the real app on the local host (timer on the given schedule, default the
 * former 30 s default; queue triggers with host.json's settings). Submits small jobs through the library, alternating
 * with a wake-up (what HTTP, CLI and `submitJob` do by default) and without one (`{ wake: false }`: only the timer can
 * start the job), and measures the time from the start of the submission to the job's first dispatch (progress
 * `dispatched > 0`, polled every 50 ms). Between rounds it waits for the job to complete and then a random part of
 * the timer's interval, so submissions land at random points of the timer's cycle. For wake-ups it also reports,
 * from the instances' events, how long the message took from sending to its handler (`wakeDelayMs`: the queue
 * trigger's polling). Prints a table and writes JSON.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, platform, release } from "node:os";
import { dirname, resolve } from "node:path";
import { type CoordinatorApp } from "../../../src/app/context";
import { createRepoApp } from "../../support/repoKinds";
import { getJobStatus, submitJob } from "../../../src/app/jobs";
import { delay } from "../../../src/library/util/delay";
import { stats, type Stats } from "./lease/summary";
import { InstanceProcess, type InstanceHandlers } from "../../../dev/src/local/instances";
import type { EventLine } from "../../../dev/src/local/protocol";
import { instanceEnv, waitForReady } from "../../../dev/src/local/startup";
import { ensureAppStorage } from "../../../dev/src/local/storageSetup";
import { parseSchedule } from "../../../dev/src/local/timerTrigger";
import { startAzurite, type Azurite } from "../../../dev/src/local/azurite";
import { numberFlag, parseFlags, pathFlag } from "../../../src/cli/flags";
import { scheduleFlag } from "../../../dev/src/cli/scheduleFlag";
import { REPO_APP } from "../../support/repoApp";

const USAGE = `Usage: npm run bench:wake -- [--rounds N] [--schedule CRON] [--instances N] [--out FILE]

Time from submission to first dispatch, with and without the submission's wake-up, on the local host.
  --rounds N       submissions per mode, 1-50 (default 5)
  --schedule CRON  COORDINATOR_SCHEDULE of the instances (default "*/30 * * * * *")
  --instances N    instance processes, 1-8 (default 3)
  --out FILE       JSON report (default bench-results/wake.json)`;

const POLL_MS = 50;
const JOB = {
  kind: "group-by",
  params: { format: "csv", keyField: "region", valueField: "amount" },
  items: Array.from({ length: 5 }, (_, i) => ({ inline: `region,amount\neu,${i}` })),
};

type Mode = "wake" | "timer-only";

interface Sample {
  mode: Mode;
  jobId: string;
  /** Start of the submission → first poll that saw progress.dispatched > 0, in s. */
  submitToFirstDispatchS: number;
  /** Start of the submission → completed, in s. */
  submitToCompletedS: number;
  /** Wake-up sent → its handler started (the first handler, when several instances saw one), in s. */
  wakeDelayS?: number;
}

/** The first wake-up handling per job, from `step-started` / `step-skipped` events with `trigger: "wake"`. */
const wakeDelays = new Map<string, number>();

function noteWake(line: EventLine): void {
  const { trigger, wakeJobId, wakeDelayMs } = line as { trigger?: unknown; wakeJobId?: unknown; wakeDelayMs?: unknown };
  if (trigger !== "wake" || typeof wakeJobId !== "string" || typeof wakeDelayMs !== "number") return;
  if (!wakeDelays.has(wakeJobId)) wakeDelays.set(wakeJobId, wakeDelayMs / 1000);
}

function parse(argv: string[]): { rounds: number; schedule: string; instances: number; out: string } | "help" {
  const values = parseFlags(argv, {
    rounds: { type: "string" },
    schedule: { type: "string" },
    instances: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean" },
  });
  if (values.help === true) return "help";
  return {
    rounds: numberFlag(values.rounds, "--rounds", { min: 1, max: 50 }) ?? 5,
    schedule: scheduleFlag(values.schedule, "--schedule", "*/30 * * * * *"),
    instances: numberFlag(values.instances, "--instances", { min: 1, max: 8 }) ?? 3,
    out: pathFlag(values.out, "--out") ?? "bench-results/wake.json",
  };
}

/** The timer's interval in ms (the gap between its next two occurrences). */
function intervalMs(schedule: string): number {
  const parsed = parseSchedule(schedule, "coordinator");
  const first = parsed.next(new Date());
  return parsed.next(first).getTime() - first.getTime();
}

async function measure(app: CoordinatorApp, mode: Mode): Promise<Sample> {
  const startedMs = performance.now();
  const submitted = await submitJob(app, JOB, { wake: mode === "wake" });
  if (!submitted.ok) throw new Error(`The job was rejected: ${JSON.stringify(submitted.errors)}`);
  if (mode === "wake" && submitted.wakeUp !== "sent")
    throw new Error(`The wake-up was not sent: ${submitted.wakeUpError ?? submitted.wakeUp}`);
  let firstDispatchS: number | undefined;
  const deadline = startedMs + 10 * 60_000;
  for (;;) {
    const status = await getJobStatus(app, submitted.id);
    const nowS = (performance.now() - startedMs) / 1000;
    if (firstDispatchS === undefined && (status?.progress.dispatched ?? 0) > 0) firstDispatchS = nowS;
    if (status?.status === "completed")
      return {
        mode,
        jobId: submitted.id,
        submitToFirstDispatchS: firstDispatchS ?? nowS,
        submitToCompletedS: nowS,
        wakeDelayS: wakeDelays.get(submitted.id),
      };
    if (performance.now() > deadline) throw new Error(`Job ${submitted.id} (${mode}) did not complete within 10 min.`);
    await delay(POLL_MS);
  }
}

async function main(): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`bench:wake: ${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (args === "help") {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const tickMs = intervalMs(args.schedule);
  process.stdout.write(
    `Wake-up benchmark: ${args.instances} instances, schedule "${args.schedule}", ${args.rounds} submissions per mode; expect about ${Math.ceil((args.rounds * 2 * (tickMs * 1.1 + 3000)) / 60_000)} min.\n`,
  );
  let azurite: Azurite | undefined;
  const instances: InstanceProcess[] = [];
  try {
    azurite = await startAzurite();
    const { env, settings } = instanceEnv(process.env, azurite.connectionString, args.schedule);
    await ensureAppStorage(azurite.connectionString, settings);
    const handlers: InstanceHandlers = {
      onEvent: (_instance, line) => noteWake(line),
      onLog: () => undefined,
      onReady: () => undefined,
      onExit: () => undefined,
    };
    for (let index = 1; index <= args.instances; index++)
      instances.push(new InstanceProcess(`instance-${index}`, { ...REPO_APP, ...env }, handlers));
    await waitForReady(instances, undefined);
    const app = createRepoApp({ ...env, WEBSITE_INSTANCE_ID: "bench-wake" });
    const samples: Sample[] = [];
    for (let round = 0; round < args.rounds * 2; round++) {
      // Alternate, so both modes see the same conditions; a random wait puts each submission anywhere in the tick.
      await delay(Math.random() * tickMs);
      const sample = await measure(app, round % 2 === 0 ? "wake" : "timer-only");
      samples.push(sample);
      const wakeNote =
        sample.wakeDelayS === undefined ? "" : ` (wake-up handled ${sample.wakeDelayS.toFixed(2)} s after sending)`;
      process.stdout.write(
        `  ${sample.mode.padEnd(10)} first dispatch after ${sample.submitToFirstDispatchS.toFixed(2)} s, completed after ${sample.submitToCompletedS.toFixed(2)} s${wakeNote}\n`,
      );
    }
    const summary = (mode: Mode): { submitToFirstDispatchS: Stats; submitToCompletedS: Stats } => {
      const of = samples.filter((sample) => sample.mode === mode);
      return {
        submitToFirstDispatchS: stats(of.map((sample) => sample.submitToFirstDispatchS)),
        submitToCompletedS: stats(of.map((sample) => sample.submitToCompletedS)),
      };
    };
    const delays = samples.flatMap((sample) => (sample.wakeDelayS === undefined ? [] : [sample.wakeDelayS]));
    const results = {
      wake: { ...summary("wake"), wakeDelayS: delays.length > 0 ? stats(delays) : null },
      timerOnly: summary("timer-only"),
    };
    const report = {
      command: `npm run bench:wake -- ${process.argv.slice(2).join(" ")}`.trim(),
      at: new Date().toISOString(),
      machine: { platform: `${platform()} ${release()}`, cpus: cpus().length, node: process.version },
      instances: args.instances,
      schedule: args.schedule,
      itemsPerJob: JOB.items.length,
      results,
      samples,
    };
    const out = resolve(process.cwd(), args.out);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    const row = (label: string, s: { submitToFirstDispatchS: Stats; submitToCompletedS: Stats }): string =>
      `| ${label} | ${s.submitToFirstDispatchS.median.toFixed(2)} | ${s.submitToFirstDispatchS.max.toFixed(2)} | ${s.submitToFirstDispatchS.min.toFixed(2)} | ${s.submitToCompletedS.median.toFixed(2)} |`;
    process.stdout.write(
      `\n| Mode | First dispatch median s | max s | min s | Completed median s |\n| --- | ---: | ---: | ---: | ---: |\n${row("wake-up", results.wake)}\n${row("timer only", results.timerOnly)}\n\nWake-up sent → handled: median ${results.wake.wakeDelayS?.median.toFixed(2) ?? "n/a"} s, max ${results.wake.wakeDelayS?.max.toFixed(2) ?? "n/a"} s.\nReport: ${out}\n`,
    );
    return 0;
  } finally {
    await Promise.all(instances.map((instance) => instance.stop(35_000)));
    await azurite?.stop();
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(
      `bench:wake failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  },
);
