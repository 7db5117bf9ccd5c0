import { fork, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { azuriteConnectionString } from "../support/azurite";
import { isProxyReport, type ProxyCommand, type RequestCount } from "./proxyProtocol";

/** The counting proxy as the benchmark sees it: a child process, its ports, and its counts on request. */

const ENTRY = resolve(__dirname, "proxyProcess.ts");
const TSX_LOADER = pathToFileURL(createRequire(__filename).resolve("tsx")).href;
const START_TIMEOUT_MS = 30_000;

/** A running counting proxy. */
export class ProxyHandle {
  private constructor(
    private readonly child: ChildProcess,
    readonly blobPort: number,
    readonly queuePort: number,
  ) {}

  /** A connection string that sends every request through the proxy. */
  get connectionString(): string {
    return azuriteConnectionString(this.blobPort, this.queuePort);
  }

  /** The proxy process id. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Forks the proxy in front of Azurite's ports; requests this process makes are counted as the runner's. */
  static async start(target: { blobPort: number; queuePort: number }): Promise<ProxyHandle> {
    const child = fork(ENTRY, [], {
      execArgv: ["--import", TSX_LOADER],
      env: { ...process.env, PROXY_BLOB_TARGET: String(target.blobPort), PROXY_QUEUE_TARGET: String(target.queuePort), PROXY_RUNNER_PID: String(process.pid) },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    const ports = await new Promise<{ blobPort: number; queuePort: number }>((done, fail) => {
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        fail(new Error(`The counting proxy did not start within ${START_TIMEOUT_MS} ms.`));
      }, START_TIMEOUT_MS);
      child.on("message", (message: unknown) => {
        if (!isProxyReport(message)) return;
        if (message.type === "ready") {
          clearTimeout(timer);
          done(message);
        } else if (message.type === "error") {
          clearTimeout(timer);
          fail(new Error(`The counting proxy failed to start: ${message.message}`));
        }
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        fail(new Error(`The counting proxy exited while starting (code ${String(code)}, signal ${String(signal)}).`));
      });
    });
    return new ProxyHandle(child, ports.blobPort, ports.queuePort);
  }

  /** The requests counted since the last call (or the start), and a fresh count from now on. */
  take(): Promise<RequestCount[]> {
    return new Promise((done, fail) => {
      const onMessage = (message: unknown): void => {
        if (!isProxyReport(message) || message.type !== "counts") return;
        this.child.off("message", onMessage);
        this.child.off("exit", onExit);
        done(message.counts);
      };
      const onExit = (): void => {
        this.child.off("message", onMessage);
        fail(new Error("The counting proxy exited before reporting its counts."));
      };
      this.child.on("message", onMessage);
      this.child.once("exit", onExit);
      this.command({ type: "take" });
    });
  }

  /** Stops the proxy (SIGKILL after 5 s). */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((done) => this.child.once("exit", () => done()));
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5_000);
    this.command({ type: "stop" });
    await exited;
    clearTimeout(timer);
  }

  /** Kills it at once (process exit paths). */
  kill(): void {
    this.child.kill("SIGKILL");
  }

  private command(command: ProxyCommand): void {
    if (this.child.connected) this.child.send(command);
  }
}
