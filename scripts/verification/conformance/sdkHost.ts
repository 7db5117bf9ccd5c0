import { spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { executionOf, remember, type HostProcess, type InvocationRecord } from "./hostProcess";
import type { HostSpec } from "./spec";

/**
 * The WebJobs SDK's side of `conformance:host`: the .NET program in ./dotnet, built with the machine's `dotnet` into
 * the git-ignored `.conformance-host/` — restored from NuGet into `.conformance-host/packages`, compiled into
 * `.conformance-host/bin` — once per change of its files (a hash of them is kept beside the build), as
 * `infra:check` keeps the Bicep compiler in `.bicep-cli/`. Each host is one process of it.
 */

const REPO_ROOT = resolve(__dirname, "..", "..", "..");
const PROJECT_DIR = join(__dirname, "dotnet");
/** The build, its packages and its inputs' hash (git-ignored). */
export const BUILD_DIR = join(REPO_ROOT, ".conformance-host");
const DLL = join(BUILD_DIR, "bin", "ConformanceHost.dll");
const STAMP = join(BUILD_DIR, "inputs.sha256");

/** The package versions the project pins, from its csproj: what the report names. */
export function pinnedPackages(): Record<string, string> {
  const project = readFileSync(join(PROJECT_DIR, "ConformanceHost.csproj"), "utf8");
  return Object.fromEntries(
    [...project.matchAll(/<PackageReference Include="([^"]+)" Version="([^"]+)"/g)].map((match) => [
      match[1] ?? "",
      match[2] ?? "",
    ]),
  );
}

function inputsHash(): string {
  const hash = createHash("sha256");
  for (const file of readdirSync(PROJECT_DIR).sort()) {
    if (!/\.(cs|csproj)$/.test(file)) continue;
    hash
      .update(file)
      .update("\0")
      .update(readFileSync(join(PROJECT_DIR, file)))
      .update("\0");
  }
  return hash.digest("hex");
}

/** How the SDK host was had: built now (with the time it took) or reused. */
export interface SdkBuild {
  dll: string;
  built: boolean;
  seconds: number;
}

/**
 * Builds the .NET program unless the build of these exact inputs is there.
 *
 * @throws Error with dotnet's output when there is no dotnet or the build fails.
 */
export function buildSdkHost(log: (line: string) => void = () => undefined): SdkBuild {
  const hash = inputsHash();
  if (existsSync(DLL) && existsSync(STAMP) && readFileSync(STAMP, "utf8") === hash)
    return { dll: DLL, built: false, seconds: 0 };
  const startedMs = Date.now();
  const sources = join(BUILD_DIR, "src");
  rmSync(sources, { recursive: true, force: true });
  mkdirSync(sources, { recursive: true });
  cpSync(PROJECT_DIR, sources, { recursive: true, filter: (path) => !/[\\/](bin|obj)([\\/]|$)/.test(path) });
  log(`Building the WebJobs SDK host (restoring from NuGet into ${BUILD_DIR}/packages the first time) …`);
  const result = spawnSync(
    "dotnet",
    [
      "build",
      join(sources, "ConformanceHost.csproj"),
      "-c",
      "Release",
      "-o",
      join(BUILD_DIR, "bin"),
      "--packages",
      join(BUILD_DIR, "packages"),
      "--nologo",
      "-v",
      "q",
      "-clp:NoSummary",
    ],
    { encoding: "utf8", env: dotnetEnv() },
  );
  if (result.error !== undefined)
    throw new Error(`could not run dotnet (the .NET SDK builds the WebJobs SDK's side): ${result.error.message}`);
  if (result.status !== 0 || !existsSync(DLL))
    throw new Error(`dotnet build of ${PROJECT_DIR} failed:\n${result.stdout}${result.stderr}`);
  writeFileSync(STAMP, hash);
  return { dll: DLL, built: true, seconds: Math.round((Date.now() - startedMs) / 100) / 10 };
}

function dotnetEnv(): NodeJS.ProcessEnv {
  return { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: "1", DOTNET_NOLOGO: "1", DOTNET_gcServer: "0" };
}

/** The SDK host's settings file: app settings and the Harness:* options of dotnet/Program.cs. */
function settingsOf(spec: HostSpec, connectionString: string): Record<string, string> {
  const settings: Record<string, string> = {
    AzureWebJobsStorage: connectionString,
    "Harness:HostId": spec.hostId,
    "Harness:TickWorkMs": String(spec.tickWorkMs ?? 0),
  };
  for (const fn of ["Work", "Tick", "TickStartup"] as const)
    settings[`Harness.${fn}.Disabled`] = String(!spec.functions.includes(fn));
  // Every %reference% must resolve, a disabled function's too (the SDK indexes it first).
  settings.WorkQueue = spec.workQueue ?? "unused";
  settings.OutQueue = spec.outQueue ?? `${spec.workQueue ?? "unused"}-out`;
  settings.TimerSchedule = spec.schedule ?? "0 0 0 1 1 *";
  const queues = spec.queues ?? {};
  if (queues.batchSize !== undefined) settings["Harness:BatchSize"] = String(queues.batchSize);
  if (queues.newBatchThreshold !== undefined) settings["Harness:NewBatchThreshold"] = String(queues.newBatchThreshold);
  if (queues.maxDequeueCount !== undefined) settings["Harness:MaxDequeueCount"] = String(queues.maxDequeueCount);
  if (queues.visibilityTimeoutMs !== undefined)
    settings["Harness:VisibilityTimeoutMs"] = String(queues.visibilityTimeoutMs);
  if (queues.maxPollingIntervalMs !== undefined)
    settings["Harness:MaxPollingIntervalMs"] = String(queues.maxPollingIntervalMs);
  if (spec.singleton !== undefined) {
    settings["Harness:ListenerLockPeriodS"] = String(spec.singleton.periodS);
    settings["Harness:ListenerLockRecoveryS"] = String(spec.singleton.recoveryS);
  }
  return settings;
}

/** Starts one SDK host process for `spec`, its storage through `connectionString` (a counting proxy). */
export function startSdkHost(
  dll: string,
  name: string,
  spec: HostSpec,
  connectionString: string,
  workDir: string,
): HostProcess {
  const settingsFile = join(workDir, `${name}.settings.json`);
  writeFileSync(settingsFile, JSON.stringify(settingsOf(spec, connectionString), null, 2));
  const env = dotnetEnv();
  // The SDK reads WEBSITE_SKU from the environment (its processor count for the default batch threshold).
  delete env.WEBSITE_SKU;
  if (spec.websiteSku !== undefined) env.WEBSITE_SKU = spec.websiteSku;
  env.TZ = "UTC";
  const child = spawn("dotnet", [dll, settingsFile], { env, stdio: ["pipe", "pipe", "pipe"] });
  const invocations: InvocationRecord[] = [];
  const executions: HostProcess["executions"] = [];
  const logs: string[] = [];
  let markReady: () => void = () => undefined;
  let failReady: (error: Error) => void = () => undefined;
  const ready = new Promise<void>((done, fail) => {
    markReady = done;
    failReady = fail;
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  void exited.then(() =>
    failReady(new Error(`SDK host ${name} exited before it was ready:\n${logs.slice(-12).join("\n")}`)),
  );
  createInterface({ input: child.stdout }).on("line", (text) => {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      remember(logs, text);
      return;
    }
    if (line.kind === "ready") markReady();
    else if (line.kind === "invocation") invocations.push(line as unknown as InvocationRecord);
    else if (line.kind === "log") {
      const message = String(line.message);
      const execution = executionOf(message, Number(line.atMs));
      if (execution !== undefined) executions.push(execution);
      remember(logs, `${String(line.level)} ${String(line.category)}: ${message}`);
    }
  });
  // A crash's stack trace would push its message out of the lines kept: keep the message, not the frames.
  createInterface({ input: child.stderr }).on("line", (text) => {
    if (!/^\s+at /.test(text)) remember(logs, `stderr: ${text}`);
  });
  // A failed spawn also ends in "exit".
  child.once("error", (error) => remember(logs, `could not start: ${error.message}`));
  return {
    side: "sdk",
    name,
    invocations,
    executions,
    logs,
    ready,
    exited,
    kill: () => child.kill("SIGKILL"),
    stop: async (timeoutMs = 30_000) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
