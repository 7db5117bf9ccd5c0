import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/**
 * Starts and stops the pinned Azurite (a devDependency) for tests, benchmarks and the local runner: spawned with node
 * directly (not npx, which can orphan it), telemetry off, on free ports read back from its "listening at" lines.
 * Nothing is installed globally and no Docker is needed.
 */

/** The well-known Azurite development account. Local/test configuration only; it is not a secret. */
const DEV_ACCOUNT = "devstoreaccount1";
const DEV_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const AZURITE_MAIN = resolve(__dirname, "..", "..", "node_modules", "azurite", "dist", "src", "azurite.js");
/** Kills Azurite when this process dies, even by SIGKILL (it watches our end of a pipe). */
const GUARD = resolve(__dirname, "azurite-guard.js");

/** Options for {@link startAzurite}. */
export interface AzuriteOptions {
  /**
   * Keep data on disk in a temporary folder (removed at {@link Azurite.stop}) instead of in memory, so that
   * {@link Azurite.restart} keeps it — a storage outage, not a storage wipe. @default false
   */
  persistent?: boolean;
  /** How long to wait for Azurite to listen, in ms. @default 30000 */
  startTimeoutMs?: number;
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

/** Starts Azurite on free ports. */
export async function startAzurite(options: AzuriteOptions = {}): Promise<Azurite> {
  const startTimeoutMs = options.startTimeoutMs ?? 30_000;
  const location = options.persistent ? mkdtempSync(join(tmpdir(), "azurite-")) : undefined;
  let child: ChildProcess | undefined;
  let ports = await spawnAzurite({ blobPort: 0, queuePort: 0, tablePort: 0 });

  async function spawnAzurite(requested: {
    blobPort: number;
    queuePort: number;
    tablePort: number;
  }): Promise<{ blobPort: number; queuePort: number; tablePort: number }> {
    const args = [
      GUARD,
      AZURITE_MAIN,
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
    const proc = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "pipe"] });
    child = proc;
    return new Promise((resolvePorts, reject) => {
      let output = "";
      const found: { blob?: number; queue?: number; table?: number } = {};
      const timer = setTimeout(() => {
        proc.kill("SIGKILL");
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

  async function stopChild(): Promise<void> {
    const proc = child;
    child = undefined;
    if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((done) => {
      const kill = setTimeout(() => proc.kill("SIGKILL"), 5_000);
      proc.once("exit", () => {
        clearTimeout(kill);
        done();
      });
      proc.kill("SIGTERM");
    });
  }

  const killOnExit = (): void => {
    child?.kill("SIGKILL");
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
