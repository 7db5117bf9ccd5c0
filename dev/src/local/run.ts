import { appendFileSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { checkHostJsonFile, currentPlatform, describeHostJsonFindings } from "azure-leader-coordinator/internal";
import { startAzurite, type Azurite } from "./azurite.js";
import { EventLog, recordFromEventLine } from "./eventLog.js";
import { InstanceProcess, type InstanceHandlers, type InstanceState } from "./instances.js";
import { statusPageUrl } from "./instanceUrls.js";
import { MidJobLeaderKill } from "./leaderKill.js";
import { LiveView } from "./liveView.js";
import { prepareJob } from "./localJob.js";
import type { RunLocalOptions } from "./options.js";
import { describeEvent } from "./report.js";
import { ensureAppStorage } from "./storageSetup.js";
import { finish, type InstanceSummary, type LocalRunResult } from "./summary.js";
import { instanceEnv, waitForReady } from "./startup.js";
import { watchRun } from "./watch.js";
import {
  appEnv,
  jobsApiOf,
  openView,
  printEndpoints,
  startInstances,
  submit,
  writeTimeline,
  type Submitted,
} from "./runParts.js";

export type { InstanceSummary, LocalRunResult } from "./summary.js";

/**
 * `runLocal`: the whole local run of a user's Function app, importable (`azure-leader-coordinator-dev local` is a thin
 * wrapper, and the end-to-end tests call this). Starts Azurite unless COORDINATION_STORAGE is set, says what the
 * host.json in use lacks, creates the app's containers and queues, starts the instance processes, submits the job
 * (the app's own, the demo, or none) through the app's HTTP route, watches until it ends (or the duration ends, or the
 * signal aborts), stops everything gracefully, and writes the event log and the timeline SVG.
 */

/** How long an instance gets to stop (its host waits up to 30 s for running invocations). */
const INSTANCE_STOP_TIMEOUT_MS = 35_000;

/** Runs the app locally with several instances and a job. Never throws: failures are in the result. */
export async function runLocal(options: RunLocalOptions = {}): Promise<LocalRunResult> {
  const baseEnv = options.env ?? process.env;
  const out = options.output ?? process.stdout;
  const projectDir = resolve(options.projectDir ?? process.cwd());
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const outputDir = options.outputDir ?? join(projectDir, ".local");
  const events = new EventLog(resolve(options.eventsPath ?? join(outputDir, `events-${stamp}.jsonl`)));
  const logsDir = join(outputDir, `logs-${stamp}`);
  const job = options.job ?? { kind: "none" };
  const result: LocalRunResult = {
    exitCode: 1,
    storage: baseEnv.COORDINATION_STORAGE === undefined ? "azurite" : "external",
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
  const instances: InstanceProcess[] = [];
  let killer: MidJobLeaderKill | undefined;
  const api = jobsApiOf(instances);
  const print = (text: string): void => {
    if (live !== "off") out.write(`${text}\n`);
  };
  try {
    if (options.appEntry === undefined) throw new Error("No app entry: name your app's entry file (appEntry).");
    const hostJson = options.hostJsonPath ?? join(projectDir, "host.json");
    // This machine's processors, as the local host's queue listeners use them (hostConfig.ts).
    const findings = checkHostJsonFile(hostJson, currentPlatform(baseEnv));
    if (findings.length > 0) print(`${describeHostJsonFindings(findings, hostJson)}\n`);
    let connectionString = baseEnv.COORDINATION_STORAGE;
    if (connectionString === undefined) {
      // On disk (a temporary folder, removed at stop): in-memory Azurite stalls for ~90 s in its queue clean-up
      // after a few thousand messages, which a long local run would mistake for a storage outage.
      azurite = await startAzurite({ persistent: true, projectDir });
      connectionString = azurite.connectionString;
    }
    const { env, settings } = instanceEnv(baseEnv, connectionString, schedule, options);
    Object.assign(env, appEnv(options.appEntry, options.hostJsonPath, projectDir));
    await ensureAppStorage(connectionString, settings);
    const prepared = await prepareJob(job, connectionString, settings, `local-demo/${stamp}`);
    result.jobSource = prepared?.source;
    result.expected = prepared?.expected;

    const view = openView(out, live, { instanceCount, schedule, azurite });
    const startedMs = Date.now();
    const elapsed = (): number => Date.now() - startedMs;
    mkdirSync(logsDir, { recursive: true });
    if (options.killLeaderAfterS !== undefined)
      killer = new MidJobLeaderKill(instances, startedMs + options.killLeaderAfterS * 1000, (text) => {
        view.note(elapsed(), text);
      });
    const handlers = runHandlers({ instances, events, view, elapsed, logsDir, result, killer: () => killer });
    startInstances(instances, { count: instanceCount, apps: options.apps ?? 1, env, handlers, events });
    await waitForReady(instances, options.abortSignal);
    printEndpoints(instances, result, print);
    let submitted: Submitted | undefined;
    if (prepared !== undefined) {
      submitted = await submit(api, prepared, options);
      result.jobId = submitted.id;
      killer?.watch(submitted.id);
      view.note(elapsed(), `submitted job ${submitted.id.slice(0, 8)} (${submitted.itemCount} items)`);
    }
    const watched = await watchRun({ job: submitted, instances, view, startedMs, options, killer });
    result.status = watched.status;
    result.problem = watched.problem;
    // The final status through the app's own view, while an instance still serves it.
    if (submitted !== undefined) result.status = (await submitted.read().catch(() => undefined)) ?? result.status;
    view.close();
  } catch (error) {
    result.problem = (error as Error).message;
  } finally {
    await Promise.all(instances.map((instance) => instance.stop(INSTANCE_STOP_TIMEOUT_MS)));
    await azurite?.stop();
    result.instances = instances.map((instance) => summarize(instance.state));
    if (killer !== undefined) result.kill = killer.result;
    writeTimeline(result.timelinePath, events, { instanceCount, apps: options.apps ?? 1, schedule });
  }
  return finish(result, print, options.abortSignal?.aborted === true);
}

/** What the run does with each instance's lines: the event log, the live view, the killer, the logs folder. */
function runHandlers(run: {
  instances: readonly InstanceProcess[];
  events: EventLog;
  view: LiveView;
  elapsed: () => number;
  logsDir: string;
  result: LocalRunResult;
  killer: () => MidJobLeaderKill | undefined;
}): InstanceHandlers {
  const { instances, events, view, elapsed, logsDir, result } = run;
  return {
    onEvent: (instance, line) => {
      events.append(recordFromEventLine(line));
      const from = instances.find((candidate) => candidate.state === instance);
      if (from !== undefined) run.killer()?.onEvent(line, from);
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
      const page = line.httpPort === undefined ? undefined : statusPageUrl(line.httpPort, line.httpRoutes ?? []);
      const http =
        line.httpPort === undefined
          ? ""
          : `, HTTP on 127.0.0.1:${line.httpPort}${page === undefined ? "" : `, status page ${page}`}`;
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
