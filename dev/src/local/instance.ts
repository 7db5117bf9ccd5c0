import { dirname } from "node:path";
import { instanceIdFrom, parseEventLine } from "azure-leader-coordinator/internal";
import { FunctionsHost } from "./host.js";
import type { HostLogEntry } from "./invoke.js";
import { formatInstanceLine, type InstanceLine } from "./protocol.js";
import { loadFunctionApp } from "./registrations.js";

/**
 * Entry of one local instance process (started by `instances.ts`, one per simulated Functions instance). It
 * loads the app with the local host and runs it until SIGTERM/SIGINT or until its stdin closes (the orchestrator is
 * gone: an orphan must not keep running). stdout carries the protocol of `protocol.ts`; nothing else is printed.
 *
 * Environment: `WEBSITE_INSTANCE_ID` (set by the orchestrator, e.g. `instance-1`), `COORDINATION_STORAGE` and the
 * app settings; `LOCAL_APP_ENTRY` (the app's entry file: required), `LOCAL_HOST_JSON` (default none: the host's
 * defaults), `LOCAL_HTTP_PORT` (default 0: a free port), `LOCAL_MESSAGE_LEASE_SECONDS` (default 600, the host's),
 * `LOCAL_LISTENER_LOCK_PERIOD_SECONDS` / `LOCAL_LISTENER_LOCK_RECOVERY_SECONDS` (the timer listener lock's periods,
 * winning over host.json `singleton`; default the host's 60 s / 60 s), and for fault injection `LOCAL_INVOKE_DELAY_MS`
 * (`worker=300,other=50`: each invocation of that function takes that much longer). The timer listener
 * lock is per app name (WEBSITE_SITE_NAME) in host storage (AzureWebJobsStorage); see `listenerLock.ts`.
 */

function write(line: InstanceLine, then?: () => void): void {
  process.stdout.write(formatInstanceLine(line), then);
}

function forward(entry: HostLogEntry): void {
  const event = parseEventLine(entry.message);
  if (event !== undefined) {
    write({ ...event, kind: "event", pid: process.pid });
    return;
  }
  write({
    kind: "log",
    level: entry.level,
    functionName: entry.functionName,
    message: entry.message,
    ts: new Date().toISOString(),
  });
}

/** An optional number of seconds as ms; undefined when unset (the host.json value then applies). */
function optionalSecondsMs(name: string): number | undefined {
  const raw = process.env[name];
  return raw === undefined || raw === "" ? undefined : numberSetting(name, 0) * 1000;
}

function numberSetting(name: string, fallback: number): number {
  const raw = process.env[name];
  const value = raw === undefined || raw === "" ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`${name} must be a non-negative number, got "${raw ?? ""}".`);
  return value;
}

/** Parses `name=ms,name=ms` (LOCAL_INVOKE_DELAY_MS). */
function invokeDelays(raw: string | undefined): Record<string, number> {
  const delays: Record<string, number> = {};
  for (const part of (raw ?? "").split(",").filter((text) => text.trim() !== "")) {
    const [name, ms] = part.split("=").map((text) => text.trim());
    const value = Number(ms);
    if (name === undefined || name === "" || !Number.isFinite(value) || value < 0)
      throw new Error(`LOCAL_INVOKE_DELAY_MS must look like "worker=300,other=50", got "${raw ?? ""}".`);
    delays[name] = value;
  }
  return delays;
}

async function main(): Promise<void> {
  const instanceId = instanceIdFrom(process.env);
  const entry = process.env.LOCAL_APP_ENTRY;
  if (entry === undefined || entry === "") throw new Error("LOCAL_APP_ENTRY must name the app's entry file.");
  // As the host sets it: the app's root folder, where its host.json is (the app reads it there at its first tick).
  const hostJson = process.env.LOCAL_HOST_JSON;
  if (hostJson !== undefined && hostJson !== "") process.env.AzureWebJobsScriptRoot ??= dirname(hostJson);
  const app = await loadFunctionApp(entry);
  const host = new FunctionsHost({
    app,
    log: forward,
    hostJsonPath: process.env.LOCAL_HOST_JSON === "" ? undefined : process.env.LOCAL_HOST_JSON,
    httpPort: numberSetting("LOCAL_HTTP_PORT", 0),
    messageLeaseMs: numberSetting("LOCAL_MESSAGE_LEASE_SECONDS", 600) * 1000,
    singletonOverrides: {
      listenerLockPeriodMs: optionalSecondsMs("LOCAL_LISTENER_LOCK_PERIOD_SECONDS"),
      listenerLockRecoveryPollingIntervalMs: optionalSecondsMs("LOCAL_LISTENER_LOCK_RECOVERY_SECONDS"),
    },
    invokeDelayMs: invokeDelays(process.env.LOCAL_INVOKE_DELAY_MS),
  });
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= host.stop().then((drained) => {
      // Exit once the line is flushed: stdout may be an asynchronous pipe.
      write({ kind: "stopped", pid: process.pid, drained }, () => process.exit(0));
    }));
  process.once("SIGTERM", () => void stop());
  process.once("SIGINT", () => void stop());
  process.stdin.once("end", () => void stop());
  process.stdin.resume();
  await host.start();
  write({
    kind: "ready",
    pid: process.pid,
    instanceId,
    functions: app.functions.map((fn) => fn.metadata.name),
    httpPort: host.httpPort,
    httpRoutes: host.httpRoutes,
  });
}

main().catch((error: unknown) => {
  const message = `Instance failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`;
  write({ kind: "log", level: "critical", message, ts: new Date().toISOString() }, () => process.exit(1));
});
