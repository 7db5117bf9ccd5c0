import { spawn, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { instanceIdFrom, eventEpoch, ConfigurationError } from "azure-leader-coordinator/internal";
import { appEntryArgs, localModule } from "./entryPoints.js";
import { fieldText } from "./eventLog.js";
import type { HttpRoute } from "./httpTrigger.js";
import { parseInstanceLine, type EventLine, type LogLine, type ReadyLine } from "./protocol.js";

/**
 * One instance process of a local run: `node instance.js` from the package, `node --import tsx instance.ts` from this
 * repository's sources (`entryPoints.ts`), running the app entry `LOCAL_APP_ENTRY` (a TypeScript entry with the
 * project's tsx). Tracks what the live view shows: pid, role, epoch, last step, exit.
 */

/**
 * The Node flags the local host starts an instance's worker with unless `languageWorkers__node__arguments` says
 * otherwise: none, as deployed (infra/modules/functionApp.bicep sets no such app setting; the infra tests check it).
 * Issue 9 had set `--max-semi-space-size=4 --heap-growing-percent=30` to keep a busy leader's RSS down; issue 35
 * dropped them: Flex Consumption bills execution time at the instance's memory size, not at the memory used, and they
 * cost 1.48 times the CPU per warm job (`npm run bench:instance`, docs/COST.md).
 */
export const NODE_WORKER_ARGUMENTS = "";

/** What is known about an instance. */
export interface InstanceState {
  readonly name: string;
  /** The app's id for this process (`name-pid`, region-prefixed when REGION_NAME is set), as in its events. */
  readonly instanceId: string;
  readonly pid: number | undefined;
  /** "leader" while it holds a term; "dead" once it exited. */
  role: "starting" | "follower" | "leader" | "dead";
  /** The latest epoch it led or saw. */
  epoch?: number;
  /** The latest step outcome: "completed", "aborted (lease-lost)", "skipped", … */
  lastStep?: { outcome: string; atMs: number };
  httpPort?: number;
  /** The HTTP routes it serves on `httpPort` (from its ready line). */
  httpRoutes?: readonly HttpRoute[];
  exit?: { code: number | null; signal: NodeJS.Signals | null; atMs: number; killedByRunner: boolean };
  startedAtMs: number;
  /** The last log lines, for error messages when it dies early. */
  readonly recentLogs: string[];
}

/** Callbacks of an {@link InstanceProcess}. */
/**
 * An instance's last output, quoted line by line for an error message. Quoted, its stack lines ("    at …") are not
 * read as the error's own stack: a test runner mapping them through tsx's loader would fail on its inline source map
 * and report that instead of the instance's error.
 */
export function lastOutput(state: InstanceState): string {
  return state.recentLogs
    .flatMap((entry) => entry.split("\n"))
    .map((line) => `  | ${line}`)
    .join("\n");
}

export interface InstanceHandlers {
  onEvent(instance: InstanceState, line: EventLine): void;
  onLog(instance: InstanceState, line: LogLine): void;
  onReady(instance: InstanceState, line: ReadyLine): void;
  onExit(instance: InstanceState): void;
}

/** A running (or exited) instance process. */
export class InstanceProcess {
  readonly state: InstanceState;
  /** Settles when the process has exited. */
  readonly exited: Promise<void>;
  private readonly child: ChildProcess;

  /**
   * @param env the instance's environment: the app settings, `LOCAL_APP_ENTRY` (the app's entry file) and the other
   *   `LOCAL_*` settings of `instance.ts`.
   * @throws ConfigurationError when `LOCAL_APP_ENTRY` is unset or missing, or is TypeScript and there is no tsx.
   */
  constructor(
    name: string,
    env: Record<string, string | undefined>,
    private readonly handlers: InstanceHandlers,
  ) {
    // Own process group (detached): Ctrl-C in the terminal reaches only the runner, which then stops the instances
    // in order. An orphan still stops: its stdin closes when the runner dies. (On Windows detached means a new
    // console window, so not there.)
    // As the Functions host starts its Node worker: with the flags of `languageWorkers__node__arguments`.
    // A loader for a TypeScript entry comes first, so that flags after it may `--import` TypeScript too.
    const nodeArguments = (env.languageWorkers__node__arguments ?? "").split(/\s+/).filter((arg) => arg !== "");
    const entry = env.LOCAL_APP_ENTRY ?? "";
    if (entry === "")
      throw new ConfigurationError("LOCAL_APP_ENTRY must name the app's entry file (its compiled JavaScript).");
    const instance = localModule("instance");
    const loader = appEntryArgs(entry, env.LOCAL_PROJECT_DIR ?? process.cwd());
    this.child = spawn(process.execPath, [...loader, ...instance.nodeArgs, ...nodeArguments, instance.script], {
      env: { ...env, WEBSITE_INSTANCE_ID: name },
      stdio: ["pipe", "pipe", "pipe"],
      detached: process.platform !== "win32",
    });
    const instanceId =
      this.child.pid === undefined
        ? name
        : instanceIdFrom({ ...env, WEBSITE_INSTANCE_ID: name }, { pid: this.child.pid });
    this.state = { name, instanceId, pid: this.child.pid, role: "starting", startedAtMs: Date.now(), recentLogs: [] };
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on("line", (text) => {
      this.onLine(text);
    });
    createInterface({ input: this.child.stderr as NodeJS.ReadableStream }).on("line", (text) => {
      this.log({ kind: "log", level: "error", message: text, ts: new Date().toISOString() });
    });
    this.exited = new Promise((done) => {
      this.child.once("exit", (code, signal) => {
        this.state.role = "dead";
        this.state.exit = { code, signal, atMs: Date.now(), killedByRunner: this.state.exit?.killedByRunner ?? false };
        this.handlers.onExit(this.state);
        done();
      });
    });
    // A failed spawn also ends in "exit"; without a listener "error" would throw.
    this.child.once("error", (error) => {
      this.log({
        kind: "log",
        level: "critical",
        message: `Could not start: ${error.message}`,
        ts: new Date().toISOString(),
      });
    });
  }

  /** True until the process exited. */
  get alive(): boolean {
    return this.state.exit === undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGKILLs the process (the survivability demo); the exit is then reported as killed by the runner. */
  kill(): void {
    this.state.exit = { code: null, signal: "SIGKILL", atMs: Date.now(), killedByRunner: true };
    this.child.kill("SIGKILL");
  }

  /**
   * Sends a signal without marking the process as stopped: SIGSTOP/SIGCONT freeze and thaw it (a zombie leader for
   * the chaos suite). Returns false when the process is gone.
   */
  signal(signal: "SIGSTOP" | "SIGCONT" | "SIGTERM"): boolean {
    return this.alive && this.child.kill(signal);
  }

  /** Asks for a graceful stop (SIGTERM), then SIGKILLs after `timeoutMs`. */
  async stop(timeoutMs: number): Promise<void> {
    if (!this.alive) return;
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  private onLine(text: string): void {
    const line = parseInstanceLine(text);
    if (line.kind === "log") this.log(line);
    else if (line.kind === "ready") {
      this.state.httpPort = line.httpPort;
      this.state.httpRoutes = line.httpRoutes;
      if (this.state.role === "starting") this.state.role = "follower";
      this.handlers.onReady(this.state, line);
    } else if (line.kind === "event") {
      this.track(line);
      this.handlers.onEvent(this.state, line);
    }
  }

  private log(line: LogLine): void {
    this.state.recentLogs.push(`${line.level}: ${line.message}`);
    if (this.state.recentLogs.length > 20) this.state.recentLogs.shift();
    this.handlers.onLog(this.state, line);
  }

  /** Role, epoch and last step from the app's events. */
  private track(event: EventLine): void {
    const state = this.state;
    const epoch = eventEpoch(event);
    if (epoch !== undefined) state.epoch = Math.max(state.epoch ?? 0, epoch);
    switch (event.type) {
      case "lease-acquired":
        state.role = "leader";
        break;
      case "lease-released":
      case "lease-lost":
        state.role = "follower";
        break;
      case "leader-observed":
        if (event.leader !== state.instanceId) state.role = "follower";
        break;
      case "step-completed":
      case "step-skipped":
        state.lastStep = { outcome: event.type.slice("step-".length), atMs: event.atMs };
        if (event.type === "step-skipped" && "leaderEpoch" in event && event.leaderEpoch !== undefined)
          state.epoch = Math.max(state.epoch ?? 0, event.leaderEpoch);
        break;
      case "step-aborted":
        state.lastStep = { outcome: `aborted (${fieldText(event.reason) || "unknown"})`, atMs: event.atMs };
        break;
      default:
        break;
    }
  }
}
