import { spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ConfigurationError } from "azure-leader-coordinator/internal";
import { MODULE_FILE } from "./moduleFile.js";

/**
 * Starts and stops Azurite for the local host, the testing entry, tests and benchmarks: spawned with node directly
 * (not npx, which can orphan it), telemetry off, on free ports read back from its "listening at" lines. Azurite is a
 * dependency of the development package: it is resolved from the user's project (then from beside the package), and
 * a clear error says how to install it when neither has it. Nothing is installed globally and no Docker is needed.
 */

/** The well-known Azurite development account. Local/test configuration only; it is not a secret. */
const DEV_ACCOUNT = "devstoreaccount1";
const DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/**
 * Runs Azurite as a grandchild and kills it when its parent goes away (its stdin closes), so a run that is SIGKILLed
 * never leaves an Azurite behind. Plain JS given to `node -e`: it needs no file and no TypeScript loader. The guard
 * itself is never sent SIGKILL while Azurite may run: a killed guard cannot stop its child, which init then adopts with
 * its ports (issue 43, hole 2). To end Azurite at once, close the guard's stdin ({@link endGuard}).
 */
const GUARD = `"use strict";
const { spawn } = require("node:child_process");
const [azuriteMain, ...args] = process.argv.slice(1);
const azurite = spawn(process.execPath, [azuriteMain, ...args], { stdio: ["ignore", "inherit", "inherit"] });
const stop = (signal) => { if (azurite.exitCode === null && azurite.signalCode === null) azurite.kill(signal); };
process.stdin.on("end", () => stop("SIGKILL"));
process.stdin.on("close", () => stop("SIGKILL"));
process.stdin.resume();
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGTERM"));
azurite.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));`;

/**
 * Azurite's main script: from the project in `projectDir` (the user's), else from beside this package.
 *
 * @throws ConfigurationError saying how to install it when neither has it.
 */
export function resolveAzuriteMain(projectDir: string = process.cwd()): string {
  for (const from of [join(projectDir, "package.json"), MODULE_FILE]) {
    try {
      const manifest = createRequire(from).resolve("azurite/package.json");
      return join(dirname(manifest), "dist", "src", "azurite.js");
    } catch {
      // not installed there: try the next place
    }
  }
  throw new ConfigurationError(
    `Azurite is not installed in ${projectDir}. It comes with azure-leader-coordinator-dev, which runs your app locally and in tests: npm install --save-dev azure-leader-coordinator-dev (or set COORDINATION_STORAGE to use other storage).`,
  );
}

/** Options for {@link startAzurite}. */
export interface AzuriteOptions {
  /**
   * Keep data on disk in a temporary folder (removed at {@link Azurite.stop}) instead of in memory, so that
   * {@link Azurite.restart} keeps it — a storage outage, not a storage wipe. @default false
   */
  persistent?: boolean;
  /** How long to wait for Azurite to listen, in ms. @default 30000 */
  startTimeoutMs?: number;
  /** The project whose Azurite runs (its node_modules). @default the current directory */
  projectDir?: string;
}

/** A running Azurite. */
export interface Azurite {
  readonly blobPort: number;
  readonly queuePort: number;
  /** The table service's port (on a free port; the app uses no tables, a benchmark's peer does). */
  readonly tablePort: number;
  /** A full connection string for these ports (`UseDevelopmentStorage=true` only means the default ports). */
  readonly connectionString: string;
  /** The child's pid while it runs. */
  readonly pid: number | undefined;
  /** Stops it (an outage): requests fail until {@link start}. Data survives when `persistent`. */
  stopService(): Promise<void>;
  /** Starts it again on the same ports. */
  startService(): Promise<void>;
  /** Stops it for `outageMs`, then starts it again. */
  restart(outageMs?: number): Promise<void>;
  /** Stops it for good and removes its data. */
  stop(): Promise<void>;
}

/** Builds a connection string for an Azurite listening on the given ports. */
export function azuriteConnectionString(blobPort: number, queuePort: number): string {
  return (
    `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};` +
    `BlobEndpoint=http://127.0.0.1:${blobPort}/${DEV_ACCOUNT};QueueEndpoint=http://127.0.0.1:${queuePort}/${DEV_ACCOUNT};`
  );
}

/** Azurite's three ports. */
interface AzuritePorts {
  blobPort: number;
  queuePort: number;
  tablePort: number;
}

/** Starts Azurite on free ports. */
export async function startAzurite(options: AzuriteOptions = {}): Promise<Azurite> {
  const startTimeoutMs = options.startTimeoutMs ?? 30_000;
  const azuriteMain = resolveAzuriteMain(options.projectDir);
  const location = options.persistent ? mkdtempSync(join(tmpdir(), "azurite-")) : undefined;
  let child: ChildProcess | undefined;
  const spawnAzurite = (requested: AzuritePorts): Promise<AzuritePorts> => {
    const proc = spawn(process.execPath, azuriteArgs(azuriteMain, requested, location), {
      stdio: ["pipe", "pipe", "pipe"],
    });
    child = proc;
    return listeningPorts(proc, startTimeoutMs);
  };
  let ports = await spawnAzurite({ blobPort: 0, queuePort: 0, tablePort: 0 });

  async function stopChild(): Promise<void> {
    const proc = child;
    child = undefined;
    await stopProcess(proc);
  }

  // This process's end closes the guard's stdin anyway (a process.exit(), a crash, a SIGKILL); said here for the exit
  // that runs handlers.
  const killOnExit = (): void => {
    endGuard(child);
  };
  process.once("exit", killOnExit);

  return {
    get blobPort() {
      return ports.blobPort;
    },
    get queuePort() {
      return ports.queuePort;
    },
    get tablePort() {
      return ports.tablePort;
    },
    get connectionString() {
      return azuriteConnectionString(ports.blobPort, ports.queuePort);
    },
    get pid() {
      return child?.pid;
    },
    stopService: stopChild,
    async startService() {
      if (child !== undefined) return;
      ports = await spawnAzurite(ports);
    },
    async restart(outageMs = 0) {
      await stopChild();
      await new Promise((done) => setTimeout(done, outageMs));
      ports = await spawnAzurite(ports);
    },
    async stop() {
      process.off("exit", killOnExit);
      await stopChild();
      if (location) rmSync(location, { recursive: true, force: true });
    },
  };
}

/** An Azurite process's command line: on `requested` ports (0: any free one), on disk at `location` or in memory. */
function azuriteArgs(azuriteMain: string, requested: AzuritePorts, location: string | undefined): string[] {
  return [
    "-e",
    GUARD,
    azuriteMain,
    "--silent",
    "--disableTelemetry",
    "--skipApiVersionCheck",
    "--blobHost",
    "127.0.0.1",
    "--queueHost",
    "127.0.0.1",
    "--blobPort",
    String(requested.blobPort),
    "--queuePort",
    String(requested.queuePort),
    "--tableHost",
    "127.0.0.1",
    "--tablePort",
    String(requested.tablePort),
    ...(location ? ["--location", location] : ["--inMemoryPersistence"]),
  ];
}

/**
 * The ports an Azurite process says it listens on, once it has said so for all three services. Rejects, with its
 * output, when it exits first or has not within `startTimeoutMs` (then it is killed).
 */
function listeningPorts(proc: ChildProcessWithoutNullStreams, startTimeoutMs: number): Promise<AzuritePorts> {
  return new Promise((resolvePorts, reject) => {
    let output = "";
    const found: { blob?: number; queue?: number; table?: number } = {};
    const timer = setTimeout(() => {
      endGuard(proc);
      reject(new Error(`Azurite did not start within ${startTimeoutMs} ms. Output:\n${output}`));
    }, startTimeoutMs);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      for (const match of output.matchAll(
        /Azurite (Blob|Queue|Table) service is successfully listening at http:\/\/[^:]+:(\d+)/g,
      )) {
        const [, service, port] = match;
        if (service === "Blob") found.blob = Number(port);
        if (service === "Queue") found.queue = Number(port);
        if (service === "Table") found.table = Number(port);
      }
      if (found.blob !== undefined && found.queue !== undefined && found.table !== undefined) {
        clearTimeout(timer);
        proc.stdout.off("data", onData);
        proc.stdout.resume();
        proc.stderr.resume();
        resolvePorts({ blobPort: found.blob, queuePort: found.queue, tablePort: found.table });
      }
    };
    proc.stdout.on("data", onData);
    proc.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    proc.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(
        new Error(
          `Azurite exited before listening (code ${code ?? "none"}, signal ${signal ?? "none"}). Output:\n${output}`,
        ),
      );
    });
  });
}

/**
 * Ends Azurite at once: closes its guard's stdin, and the guard SIGKILLs Azurite and then exits with it. Never a
 * SIGKILL of the guard itself, which would orphan Azurite.
 */
function endGuard(proc: ChildProcess | undefined): void {
  proc?.stdin?.destroy();
}

/**
 * Stops an Azurite process: SIGTERM (the guard passes it on), then, after 5 s, Azurite's SIGKILL through its guard
 * ({@link endGuard}); at once when it is not running. The guard exits once Azurite has.
 */
async function stopProcess(proc: ChildProcess | undefined): Promise<void> {
  if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
  await new Promise<void>((done) => {
    const kill = setTimeout(() => endGuard(proc), 5_000);
    proc.once("exit", () => {
      clearTimeout(kill);
      done();
    });
    proc.kill("SIGTERM");
  });
}
