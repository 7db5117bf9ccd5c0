import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { aggregatesMatch, asAggregate } from "../../../../dev/src/local/demoData";
import { readCpuTimes } from "../throughput/cpuTimes";
import { readRssKiB } from "../throughput/projectRun";
import type { ScenarioJob } from "../throughput/scenarios";

/**
 * The Durable Task Framework side of `bench:peer`: builds the .NET harness (./dotnet, restored from NuGet by `dotnet
 * build`) and runs one job through it — a fresh task hub, fresh worker processes that own its partitions, one
 * orchestration started by a client process, which prints when it completed (the framework's own CompletedTime).
 */

const PROJECT_DIR = resolve(__dirname, "dotnet");
const OUTPUT_DIR = join(PROJECT_DIR, "bin", "peer");
const PEER_DLL = join(OUTPUT_DIR, "Peer.dll");

export type PeerVariant = "per-item" | "batched";

/** Restores and builds the harness (Release, into ./dotnet/bin/peer); throws with dotnet's output when it fails. */
export function buildPeer(): string {
  const result = spawnSync(
    "dotnet",
    [
      "build",
      join(PROJECT_DIR, "Peer.csproj"),
      "-c",
      "Release",
      "-o",
      OUTPUT_DIR,
      "--nologo",
      "-v",
      "q",
      "-clp:NoSummary",
    ],
    { encoding: "utf8", env: { ...process.env, DOTNET_CLI_TELEMETRY_OPTOUT: "1", DOTNET_NOLOGO: "1" } },
  );
  if (result.error !== undefined)
    throw new Error(`could not run dotnet (the .NET SDK is needed for the peer): ${result.error.message}`);
  if (result.status !== 0 || !existsSync(PEER_DLL))
    throw new Error(`dotnet build of ${PROJECT_DIR} failed:\n${result.stdout}${result.stderr}`);
  return PEER_DLL;
}

const dotnetEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  DOTNET_CLI_TELEMETRY_OPTOUT: "1",
  DOTNET_NOLOGO: "1",
  // One GC heap per process, as each worker is one small instance (the default for a console app; said, not assumed).
  DOTNET_gcServer: "0",
});

/** Options of {@link runDurableTask}. */
export interface DurableTaskRunOptions {
  /** Through the counting proxy (blob, queue, table). */
  connectionString: string;
  /** Straight to Azurite: setup and the client's status polls, not counted. */
  directConnectionString: string;
  job: ScenarioJob;
  inputContainer: string;
  variant: PeerVariant;
  unitItems: number;
  workers: number;
  partitions: number;
  hub: string;
  outputDir: string;
  /** How long the workers run idle after they started before the orchestration is created, ms. */
  settleMs: number;
  maxWaitS: number;
}

/** What one framework run measured. */
export interface DurableTaskRunResult {
  ok: boolean;
  problem: string | undefined;
  startMs: number | undefined;
  completedMs: number | undefined;
  completionS: number | undefined;
  episodes: number;
  activities: number;
  /** VmHWM of each worker process at the end, MiB; the orchestrator's is the largest (it holds the orchestration). */
  workersPeakRssMiB: number[];
  workersCpuS: number | undefined;
}

interface Worker {
  child: ChildProcess;
  countsFile: string;
  ready: Promise<void>;
  exited: Promise<void>;
}

function runOnce(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn("dotnet", [PEER_DLL, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("exit", (code) => done({ code: code ?? 1, stdout, stderr }));
  });
}

const live = new Set<ChildProcess>();

/** Kills every harness process still running (at exit or on an interrupt). */
export function killPeerProcesses(): void {
  for (const child of live) child.kill("SIGKILL");
}

function startWorker(options: DurableTaskRunOptions, index: number): Worker {
  const countsFile = join(options.outputDir, `peer-${options.hub}-worker-${index}.json`);
  const child = spawn(
    "dotnet",
    [PEER_DLL, "worker", options.connectionString, options.hub, String(options.partitions), countsFile],
    { env: dotnetEnv(), stdio: ["pipe", "pipe", "pipe"] },
  );
  live.add(child);
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((done) =>
    child.once("exit", () => {
      live.delete(child);
      done();
    }),
  );
  const ready = new Promise<void>((done, fail) => {
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on("line", (line) => {
      if (line.trim() === "ready") done();
    });
    void exited.then(() => fail(new Error(`peer worker ${index} exited before it was ready: ${stderr.slice(-2000)}`)));
  });
  return { child, countsFile, ready, exited };
}

/** Runs one job through the framework. Never throws for a failed job: `ok` and `problem` say. */
export async function runDurableTask(options: DurableTaskRunOptions): Promise<DurableTaskRunResult> {
  const result: DurableTaskRunResult = {
    ok: false,
    problem: undefined,
    startMs: undefined,
    completedMs: undefined,
    completionS: undefined,
    episodes: 0,
    activities: 0,
    workersPeakRssMiB: [],
    workersCpuS: undefined,
  };
  const setup = await runOnce(
    ["setup", options.directConnectionString, options.hub, String(options.partitions)],
    dotnetEnv(),
  );
  if (setup.code !== 0) {
    result.problem = `task hub setup failed: ${setup.stderr.slice(-2000)}`;
    return result;
  }
  const jobFile = join(options.outputDir, `peer-${options.hub}-job.json`);
  writeFileSync(
    jobFile,
    JSON.stringify({
      keyField: options.job.params.keyField,
      valueField: options.job.params.valueField,
      inputContainer: options.inputContainer,
      items: options.job.items,
    }),
  );
  const workers: Worker[] = [];
  try {
    for (let index = 1; index <= options.workers; index++) workers.push(startWorker(options, index));
    await Promise.all(workers.map((worker) => worker.ready));
    // The workers take their partitions' leases after they start: let them, as the app's instances are ready first.
    await new Promise((done) => setTimeout(done, options.settleMs));
    const cpuBefore = workers.map((worker) =>
      worker.child.pid === undefined ? undefined : readCpuTimes(worker.child.pid),
    );
    const run = await runOnce(
      [
        "run",
        options.connectionString,
        options.directConnectionString,
        options.hub,
        String(options.partitions),
        jobFile,
        options.variant,
        String(options.unitItems),
        String(options.maxWaitS),
      ],
      dotnetEnv(),
    );
    const line = run.stdout.trim().split("\n").at(-1) ?? "";
    let parsed: { status?: string; startMs?: number; completedMs?: number | null; output?: string | null } = {};
    try {
      parsed = JSON.parse(line) as typeof parsed;
    } catch {
      result.problem = `the peer client printed no result (exit ${run.code}): ${run.stderr.slice(-2000)}`;
    }
    result.startMs = parsed.startMs;
    result.completedMs = parsed.completedMs ?? undefined;
    if (result.startMs !== undefined && result.completedMs !== undefined)
      result.completionS = (result.completedMs - result.startMs) / 1000;
    // The last deletes and checkpoints after completion.
    await new Promise((done) => setTimeout(done, 1500));
    const cpuAfter = workers.map((worker) =>
      worker.child.pid === undefined ? undefined : readCpuTimes(worker.child.pid),
    );
    if (cpuBefore.every((times) => times !== undefined) && cpuAfter.every((times) => times !== undefined))
      result.workersCpuS =
        Math.round(cpuAfter.reduce((sum, times, index) => sum + times.cpuS - (cpuBefore[index]?.cpuS ?? 0), 0) * 100) /
        100;
    result.workersPeakRssMiB = workers.map((worker) => {
      const kib = worker.child.pid === undefined ? undefined : readRssKiB(worker.child.pid, "VmHWM");
      return kib === undefined ? 0 : Math.round((kib / 1024) * 10) / 10;
    });
    if (result.problem === undefined) {
      // The framework's JSON names each object's .NET type ("$type"): not part of the answer.
      const output: unknown =
        parsed.output === null || parsed.output === undefined
          ? undefined
          : JSON.parse(parsed.output, (key, value: unknown) => (key === "$type" ? undefined : value));
      if (parsed.status !== "Completed") result.problem = `the orchestration ended as ${parsed.status ?? "?"}`;
      else if (!aggregatesMatch(asAggregate(output), options.job.expected))
        result.problem = `the orchestration completed, but its aggregate differs from the expected one: ${JSON.stringify(output).slice(0, 300)} against ${JSON.stringify(options.job.expected).slice(0, 300)}`;
      else result.ok = true;
    }
  } catch (error) {
    result.problem = (error as Error).message;
  } finally {
    for (const worker of workers) worker.child.stdin?.end();
    const stopped = Promise.all(workers.map((worker) => worker.exited));
    const timer = setTimeout(() => {
      for (const worker of workers) worker.child.kill("SIGKILL");
    }, 60_000);
    await stopped;
    clearTimeout(timer);
  }
  for (const worker of workers) {
    try {
      const counts = JSON.parse(readFileSync(worker.countsFile, "utf8")) as { episodes: number; activities: number };
      result.episodes += counts.episodes;
      result.activities += counts.activities;
    } catch {
      // A worker that was killed wrote no counts: the executions are then a lower bound, said by `problem`.
      result.problem ??= "a worker wrote no execution counts";
    }
  }
  return result;
}
