import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { InstanceProcess } from "../../../dev/src/local/instances";
import { executionOf, remember, type HostProcess, type InvocationRecord } from "./hostProcess";
import type { HostSpec } from "./spec";

/**
 * The local host's side of `conformance:host`: one instance process of `dev/src/local` (the same one `local`, the tests
 * and the chaos suite start), running ./app.ts with a host.json written from the scenario's spec.
 */

const APP = join(__dirname, "app.ts");

/** "00:00:01.500" for 1500 ms. */
function timeSpan(ms: number): string {
  const pad = (value: number, width = 2): string => String(value).padStart(width, "0");
  const totalS = Math.floor(ms / 1000);
  return `${pad(Math.floor(totalS / 3600))}:${pad(Math.floor(totalS / 60) % 60)}:${pad(totalS % 60)}.${pad(ms % 1000, 3)}`;
}

function hostJsonOf(spec: HostSpec): unknown {
  const queues = spec.queues ?? {};
  return {
    version: "2.0",
    extensions: {
      queues: {
        ...(queues.batchSize === undefined ? {} : { batchSize: queues.batchSize }),
        ...(queues.newBatchThreshold === undefined ? {} : { newBatchThreshold: queues.newBatchThreshold }),
        ...(queues.maxDequeueCount === undefined ? {} : { maxDequeueCount: queues.maxDequeueCount }),
        ...(queues.visibilityTimeoutMs === undefined
          ? {}
          : { visibilityTimeout: timeSpan(queues.visibilityTimeoutMs) }),
        ...(queues.maxPollingIntervalMs === undefined
          ? {}
          : { maxPollingInterval: timeSpan(queues.maxPollingIntervalMs) }),
      },
    },
    ...(spec.singleton === undefined
      ? {}
      : {
          singleton: {
            listenerLockPeriod: timeSpan(spec.singleton.periodS * 1000),
            listenerLockRecoveryPollingInterval: timeSpan(spec.singleton.recoveryS * 1000),
          },
        }),
  };
}

/** Starts one local host instance process for `spec`, its storage through `connectionString` (a counting proxy). */
export function startLocalHost(name: string, spec: HostSpec, connectionString: string, workDir: string): HostProcess {
  const hostJson = join(workDir, `${name}.host.json`);
  writeFileSync(hostJson, JSON.stringify(hostJsonOf(spec), null, 2));
  const env: Record<string, string | undefined> = {
    ...process.env,
    LOCAL_APP_ENTRY: APP,
    LOCAL_HOST_JSON: hostJson,
    AzureWebJobsStorage: connectionString,
    AzureFunctionsWebHost__hostid: spec.hostId,
    WorkQueue: spec.workQueue ?? "unused",
    OutQueue: spec.outQueue ?? `${spec.workQueue ?? "unused"}-out`,
    TimerSchedule: spec.schedule ?? "0 0 0 1 1 *",
    HARNESS_TICK_WORK_MS: String(spec.tickWorkMs ?? 0),
    WEBSITE_SKU: spec.websiteSku,
    WEBSITE_SITE_NAME: undefined,
    TZ: "UTC",
  };
  for (const fn of ["Work", "Tick", "TickStartup"] as const)
    env[`AzureWebJobs.${fn}.Disabled`] = String(!spec.functions.includes(fn));
  const invocations: InvocationRecord[] = [];
  const executions: HostProcess["executions"] = [];
  const logs: string[] = [];
  let markReady: () => void = () => undefined;
  const instance = new InstanceProcess(name, env, {
    onEvent: () => undefined,
    onReady: () => markReady(),
    onExit: () => undefined,
    onLog: (_state, line) => {
      const atMs = Date.parse(line.ts);
      if (line.message.startsWith("conformance ")) {
        invocations.push(JSON.parse(line.message.slice("conformance ".length)) as InvocationRecord);
        return;
      }
      const execution = executionOf(line.message, atMs);
      if (execution !== undefined) executions.push(execution);
      remember(logs, `${line.level}: ${line.message}`);
    },
  });
  const ready = new Promise<void>((done, fail) => {
    markReady = done;
    void instance.exited.then(() =>
      fail(new Error(`local host ${name} exited before it was ready:\n${logs.slice(-12).join("\n")}`)),
    );
  });
  return {
    side: "local",
    name,
    invocations,
    executions,
    logs,
    ready,
    exited: instance.exited,
    kill: () => instance.kill(),
    stop: (timeoutMs = 30_000) => instance.stop(timeoutMs),
  };
}
