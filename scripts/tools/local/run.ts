import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { createCoordinatorApp, type CoordinatorApp } from "../../../src/app/context";
import { getJobStatus, submitJob, type JobStatus } from "../../../src/app/jobs";
import { readSettings, settingsSchema, type Settings } from "../../../src/app/settings";
import { parseNcrontab } from "../../../src/app/schedule";
import { delay } from "../../../src/library/util/delay";
import { startAzurite, type Azurite } from "../../support/azurite";
import { aggregatesMatch, asAggregate, createDemoJob, type Aggregate } from "./demoData";
import { EventLog, recordFromEventLine } from "./eventLog";
import {
  InstanceProcess,
  NODE_WORKER_ARGUMENTS,
  lastOutput,
  type InstanceHandlers,
  type InstanceState,
} from "./instances";
import { MidJobLeaderKill } from "./leaderKill";
import { LiveView } from "./liveView";
import type { LocalOptions, RunLocalOptions } from "./options";
import { aggregateTable, describeEvent } from "./report";
import { ensureAppStorage } from "./storageSetup";
import { renderTimeline } from "./timeline";
import { watchRun } from "./watch";

/**
 * `runLocal`: the whole local run, importable (the CLI in `scripts/tools/local.ts` is a thin wrapper, and the
 * end-to-end test calls this). Starts Azurite unless COORDINATION_STORAGE is set, creates the app's containers and
 * queues, starts the instance processes, submits the demo job, watches until it is done (or the duration ends, or the
 * signal aborts), stops everything gracefully, and writes the event log and the timeline SVG.
 */

const REPO_ROOT = resolve(__dirname, "..", "..", "..");
/** How long an instance gets to stop (its host waits up to 30 s for running invocations). */
const INSTANCE_STOP_TIMEOUT_MS = 35_000;

/** An instance of the run, as it ended. */
export interface InstanceSummary {
  name: string;
  /** The app's id for the process, as in the event log. */
  instanceId: string;
  pid: number | undefined;
  startedAt: string;
  exit?: { code: number | null; signal: string | null; at: string; killedByRunner: boolean };
}

/** What a run did. `exitCode` is 0 only when the job completed with the expected aggregate. */
export interface LocalRunResult {
  exitCode: number;
  /** Why the run failed, for a person; undefined on success. */
  problem?: string;
  storage: "azurite" | "external";
  jobId?: string;
  /** The job's final status as the app reports it. */
  status?: JobStatus;
  aggregate?: Aggregate;
  expected: Aggregate;
  matches: boolean;
  /** The status page of the first instance that serves HTTP (printed at start; gone when the run ends). */
  statusUrl?: string;
  eventsPath: string;
  timelinePath: string;
  logsDir: string;
  instances: InstanceSummary[];
  /** Work units each instance's worker finished (its host's "Executed" lines), by instance name. */
  unitsByInstance: Record<string, number>;
  /** With `killLeaderAfterS`: who was killed mid-job, with the job how far (or why nobody was). */
  kill?: string;
}

/** Runs the coordinator app locally with several instances and a demo job. Never throws: failures are in the result. */
export async function runLocal(options: RunLocalOptions = {}): Promise<LocalRunResult> {
  const baseEnv = options.env ?? process.env;
  const out = options.output ?? process.stdout;
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const outputDir = options.outputDir ?? join(REPO_ROOT, ".local");
  const events = new EventLog(resolve(options.eventsPath ?? join(outputDir, `events-${stamp}.jsonl`)));
  const logsDir = join(outputDir, `logs-${stamp}`);
  const demo = createDemoJob(options.items ?? 200, `local-demo/${stamp}`);
  const result: LocalRunResult = {
    exitCode: 1,
    storage: baseEnv.COORDINATION_STORAGE === undefined ? "azurite" : "external",
    expected: demo.expected,
    matches: false,
    eventsPath: events.path,
    timelinePath: resolve(options.timelinePath ?? join(outputDir, `timeline-${stamp}.svg`)),
    logsDir,
    instances: [],
    unitsByInstance: {},
  };
  const live =
    options.live ?? ((out as { isTTY?: boolean }).isTTY === true && baseEnv.CI === undefined ? "tty" : "plain");
  const schedule = options.schedule ?? "*/5 * * * * *";
  const instanceCount = options.instances ?? 3;
  let azurite: Azurite | undefined;
  let app: CoordinatorApp | undefined;
  const instances: InstanceProcess[] = [];
  let killer: MidJobLeaderKill | undefined;
  const print = (text: string): void => {
    if (live !== "off") out.write(`${text}\n`);
  };
  try {
    let connectionString = baseEnv.COORDINATION_STORAGE;
    if (connectionString === undefined) {
      try {
        // On disk (a temporary folder, removed at stop): in-memory Azurite stalls for ~90 s in its queue clean-up
        // after a few thousand messages, which a long local run would mistake for a storage outage.
        azurite = await startAzurite({ persistent: true });
      } catch (error) {
        throw new Error(
          `Azurite could not start: ${(error as Error).message}\nCheck that dev dependencies are installed (npm ci), or set COORDINATION_STORAGE to use other storage.`,
        );
      }
      connectionString = azurite.connectionString;
    }
    const { env, settings } = instanceEnv(baseEnv, connectionString, schedule, options);
    await ensureAppStorage(connectionString, settings);
    const inputs = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(
      settings.INPUT_CONTAINER,
    );
    // Bounded: thousands of uploads at once exhaust sockets.
    for (let start = 0; start < demo.blobs.length; start += 64) {
      await Promise.all(
        demo.blobs
          .slice(start, start + 64)
          .map((blob) => inputs.getBlockBlobClient(blob.name).upload(blob.text, Buffer.byteLength(blob.text))),
      );
    }

    if (azurite !== undefined) {
      // The well-known Azurite development key: local configuration only.
      print(
        `Submit more work while it runs (with --duration):\n  COORDINATION_STORAGE="${azurite.connectionString}" npm run enqueue -- --file examples/sales-job.json --wait`,
      );
    }
    const storageLabel =
      azurite === undefined
        ? "COORDINATION_STORAGE"
        : `Azurite (blob :${azurite.blobPort}, queue :${azurite.queuePort})`;
    const view = new LiveView(
      out,
      live,
      `Local coordinator: ${instanceCount} instances, schedule "${schedule}", storage ${storageLabel}`,
    );
    const startedMs = Date.now();
    const elapsed = (): number => Date.now() - startedMs;
    mkdirSync(logsDir, { recursive: true });
    if (options.killLeaderAfterS !== undefined)
      killer = new MidJobLeaderKill(instances, startedMs + options.killLeaderAfterS * 1000, (text) => {
        view.note(elapsed(), text);
      });
    const handlers: InstanceHandlers = {
      onEvent: (instance, line) => {
        events.append(recordFromEventLine(line));
        const from = instances.find((candidate) => candidate.state === instance);
        if (from !== undefined) killer?.onEvent(line, from);
        const text = describeEvent(line);
        if (text !== undefined) view.note(elapsed(), text);
      },
      onLog: (instance, line) => {
        if (line.functionName === "worker" && line.message.startsWith("Executed"))
          result.unitsByInstance[instance.name] = (result.unitsByInstance[instance.name] ?? 0) + 1;
        appendFileSync(
          join(logsDir, `${instance.name}.log`),
          `${line.ts} ${line.level} ${line.functionName === undefined ? "" : `[${line.functionName}] `}${line.message}\n`,
        );
      },
      onReady: (instance, line) => {
        const http =
          line.httpPort === undefined
            ? ""
            : `, HTTP http://127.0.0.1:${line.httpPort}/api, status page ${statusPageUrl(line.httpPort)}`;
        view.note(elapsed(), `${instance.name} ready (pid ${line.pid}, ${line.functions.length} functions${http})`);
      },
      onExit: (instance) => {
        const exit = instance.exit;
        events.append({
          ts: new Date().toISOString(),
          instance: instance.instanceId,
          pid: instance.pid,
          type: "instance-exited",
          code: exit?.code ?? null,
          signal: exit?.signal ?? null,
          killedByRunner: exit?.killedByRunner ?? false,
        });
        view.note(
          elapsed(),
          `${instance.name} exited (${exit?.signal ?? `code ${String(exit?.code)}`})${exit?.killedByRunner === true ? " — killed by the runner" : ""}`,
        );
      },
    };
    const apps = options.apps ?? 1;
    for (let index = 1; index <= instanceCount; index++) {
      // Several apps: instances round-robin over app names; one app: the base env's WEBSITE_SITE_NAME (or the default).
      const siteName = apps > 1 ? `local-app-${((index - 1) % apps) + 1}` : env.WEBSITE_SITE_NAME;
      const instance = new InstanceProcess(`instance-${index}`, { ...env, WEBSITE_SITE_NAME: siteName }, handlers);
      instances.push(instance);
      events.append({
        ts: new Date().toISOString(),
        instance: instance.state.instanceId,
        pid: instance.state.pid,
        type: "instance-started",
      });
    }
    await waitForReady(instances, options.abortSignal);
    const port = instances.find((instance) => instance.state.httpPort !== undefined)?.state.httpPort;
    if (port !== undefined) {
      result.statusUrl = statusPageUrl(port);
      print(`Status page (every instance serves it; it refreshes itself): ${result.statusUrl}`);
    }

    app = createCoordinatorApp({ ...env, WEBSITE_INSTANCE_ID: "local-runner" });
    const submitted = await submitJob(app, demo.spec);
    if (!submitted.ok)
      throw new Error(
        `The app rejected the demo job: ${submitted.errors.map((error) => `${error.field}: ${error.message}`).join("; ")}`,
      );
    result.jobId = submitted.id;
    killer?.watch(submitted.id);
    view.note(elapsed(), `submitted job ${submitted.id.slice(0, 8)} (${submitted.itemCount} items)`);

    const watched = await watchRun({ app, jobId: submitted.id, instances, view, startedMs, options, killer });
    result.status = watched.status;
    result.problem = watched.problem;
    view.close();
  } catch (error) {
    result.problem = (error as Error).message;
  } finally {
    await Promise.all(instances.map((instance) => instance.stop(INSTANCE_STOP_TIMEOUT_MS)));
    if (app !== undefined && result.jobId !== undefined)
      result.status = (await getJobStatus(app, result.jobId).catch(() => undefined)) ?? result.status;
    await azurite?.stop();
    result.instances = instances.map((instance) => summarize(instance.state));
    if (killer !== undefined) result.kill = killer.result;
    mkdirSync(dirname(result.timelinePath), { recursive: true });
    writeFileSync(
      result.timelinePath,
      renderTimeline(events.records, {
        title: `Leadership timeline — ${instanceCount} instances (${(options.apps ?? 1) > 1 ? `${options.apps ?? 1} apps` : "one app"}), schedule "${schedule}"`,
      }),
    );
  }
  return finish(result, print, options.abortSignal?.aborted === true);
}

/** GET /api/status on a local instance (authLevel is not enforced locally, so no `?code=`). */
function statusPageUrl(port: number): string {
  return `http://127.0.0.1:${port}/api/status`;
}

/** Decides the exit code and prints the summary. */
function finish(result: LocalRunResult, print: (text: string) => void, interrupted: boolean): LocalRunResult {
  result.aggregate = asAggregate(result.status?.aggregate);
  result.matches = aggregatesMatch(result.aggregate, result.expected);
  const completed = result.status?.status === "completed";
  if (result.problem === undefined && interrupted) result.problem = "Interrupted before the run finished.";
  else if (
    result.problem === undefined &&
    (result.status?.status === "cancelled" || result.status?.status === "expired")
  )
    result.problem = `The job ended as ${result.status.status} before completing.`;
  else if (result.problem === undefined && !completed)
    result.problem = `The job did not complete in time (status ${result.status?.status ?? "unknown"}).`;
  else if (result.problem === undefined && !result.matches)
    result.problem = "The job completed, but its aggregate differs from the expected one.";
  else if (result.problem === undefined && result.kill !== undefined && !result.kill.startsWith("killed"))
    result.problem = `--kill-leader-after: ${result.kill}.`;
  result.exitCode = result.problem === undefined ? 0 : interrupted ? 130 : 1;
  printSummary(result, print);
  return result;
}

/**
 * The instances' app settings: `baseEnv` with the storage and the schedule, and every setting the app reads filled in
 * with its default (bindings name settings such as %WORK_QUEUE%; in Azure the Bicep sets every one). The coordination
 * account doubles as host storage (AzureWebJobsStorage), where the host keeps the timer listener lock. Without a
 * STEP_BUDGET_MS, a schedule faster than the app's default budget (the runner's 5 s) gets a budget one second below
 * its shortest interval, which the app requires.
 */
export function instanceEnv(
  baseEnv: Record<string, string | undefined>,
  connectionString: string,
  schedule: string,
  lock: Pick<LocalOptions, "listenerLockPeriodS" | "listenerLockRecoveryS"> = {},
): { env: Record<string, string | undefined>; settings: Settings } {
  const env: Record<string, string | undefined> = {
    ...baseEnv,
    COORDINATION_STORAGE: connectionString,
    AzureWebJobsStorage: connectionString,
    COORDINATOR_SCHEDULE: schedule,
    LOCAL_LISTENER_LOCK_PERIOD_SECONDS:
      lock.listenerLockPeriodS?.toString() ?? baseEnv.LOCAL_LISTENER_LOCK_PERIOD_SECONDS,
    LOCAL_LISTENER_LOCK_RECOVERY_SECONDS:
      lock.listenerLockRecoveryS?.toString() ?? baseEnv.LOCAL_LISTENER_LOCK_RECOVERY_SECONDS,
    // A killed instance's messages come back after 30 s instead of the host's 10 min (renewed while running).
    LOCAL_MESSAGE_LEASE_SECONDS: baseEnv.LOCAL_MESSAGE_LEASE_SECONDS ?? "30",
    // The Node flags the app is deployed with (an empty value runs Node's defaults).
    languageWorkers__node__arguments: baseEnv.languageWorkers__node__arguments ?? NODE_WORKER_ARGUMENTS,
  };
  if ((baseEnv.STEP_BUDGET_MS ?? "").trim() === "") env.STEP_BUDGET_MS = budgetBelow(schedule);
  const settings = readSettings(env);
  for (const [name, value] of Object.entries(settings)) if ((env[name] ?? "").trim() === "") env[name] = String(value);
  return { env, settings };
}

/** The app's default step budget, or one second below the schedule's shortest interval when that is shorter. */
function budgetBelow(schedule: string): string | undefined {
  const parsed = parseNcrontab(schedule);
  const defaultBudget = settingsSchema.shape.STEP_BUDGET_MS.parse(undefined);
  if (!parsed.ok || parsed.schedule.shortestIntervalMs > defaultBudget) return undefined;
  return String(Math.max(1000, parsed.schedule.shortestIntervalMs - 1000));
}

/** Waits until every instance has reported ready. @throws Error when one exits first or 60 s pass. */
export async function waitForReady(
  instances: readonly InstanceProcess[],
  abortSignal: AbortSignal | undefined,
): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const dead = instances.find((instance) => instance.state.exit !== undefined);
    if (dead !== undefined)
      throw new Error(`${dead.state.name} exited while starting. Its last output:\n${lastOutput(dead.state)}`);
    if (instances.every((instance) => instance.state.role !== "starting")) return;
    if (Date.now() > deadline) throw new Error("The instances did not start within 60 s.");
    await delay(100, { abortSignal });
  }
}

function summarize(state: InstanceState): InstanceSummary {
  const exit = state.exit;
  return {
    name: state.name,
    instanceId: state.instanceId,
    pid: state.pid,
    startedAt: new Date(state.startedAtMs).toISOString(),
    ...(exit === undefined
      ? {}
      : {
          exit: {
            code: exit.code,
            signal: exit.signal,
            at: new Date(exit.atMs).toISOString(),
            killedByRunner: exit.killedByRunner,
          },
        }),
  };
}

function printSummary(result: LocalRunResult, print: (text: string) => void): void {
  const progress = result.status?.progress;
  print("");
  print(
    `Job ${result.jobId ?? "(not submitted)"}: ${result.status?.status ?? "unknown"}${progress === undefined ? "" : ` — done ${progress.done}/${progress.total}, failed ${progress.failed}`}`,
  );
  for (const line of aggregateTable(result.aggregate, result.expected)) print(line);
  const seconds = jobSeconds(result.status);
  if (seconds !== undefined && progress !== undefined)
    print(
      `Duration: ${seconds.toFixed(1)} s from submission to ${result.status?.status ?? "end"}, ${Math.round((progress.done + progress.failed) / seconds)} items/s`,
    );
  const units = result.instances.map((instance) => `${instance.name} ${result.unitsByInstance[instance.name] ?? 0}`);
  print(`Work units per instance: ${units.join(", ")}`);
  if (result.kill !== undefined) print(`Kill: ${result.kill}`);
  print(`Aggregate matches the expected one: ${result.matches ? "yes" : "no"}`);
  print(`Events:   ${result.eventsPath}`);
  print(`Timeline: ${result.timelinePath}`);
  print(`Logs:     ${result.logsDir}`);
  if (result.problem !== undefined) print(`\n${result.problem}`);
}

/** Seconds from the job's submission to its end, from its status; undefined while it runs. */
function jobSeconds(status: JobStatus | undefined): number | undefined {
  if (status?.endedAt === undefined) return undefined;
  return Math.max(0.001, (Date.parse(status.endedAt) - Date.parse(status.createdAt)) / 1000);
}
