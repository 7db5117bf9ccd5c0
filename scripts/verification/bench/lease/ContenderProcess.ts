import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { parseContenderMessage, RELEASE_COMMAND, type ContenderMessage, type Implementation } from "./protocol";

/** The repository root: the cwd of every contender, so that `--import tsx` resolves from its node_modules. */
export const REPO_ROOT = resolve(__dirname, "..", "..", "..", "..");
const CONTENDER_ENTRY = resolve(__dirname, "contender.ts");
const STDERR_TAIL_CHARS = 4_000;

/** Options for {@link ContenderProcess}. */
export interface ContenderProcessOptions {
  impl: Implementation;
  id: string;
  connectionString: string;
  container: string;
  /** Every protocol line the contender prints. */
  onMessage: (message: ContenderMessage, contender: ContenderProcess) => void;
  /** The process ended and its output has been read to the end. */
  onClose: (contender: ContenderProcess, code: number | null, signal: NodeJS.Signals | null) => void;
}

/** Every contender still running, so that an exit, an error or Ctrl-C can kill them all. */
const running = new Set<ContenderProcess>();

/** One contender: a separate OS process running scripts/verification/bench/lease/contender.ts. */
export class ContenderProcess {
  readonly id: string;
  readonly impl: Implementation;
  /** Resolves once the process has exited and its stdout and stderr are closed. */
  readonly closed: Promise<void>;
  private readonly child: ChildProcessWithoutNullStreams;
  private stderrTail = "";

  constructor(options: ContenderProcessOptions) {
    this.id = options.id;
    this.impl = options.impl;
    const args = [
      "--import",
      "tsx",
      CONTENDER_ENTRY,
      "--impl",
      options.impl,
      "--connection-string",
      options.connectionString,
      "--container",
      options.container,
      "--id",
      options.id,
    ];
    this.child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ["pipe", "pipe", "pipe"] });
    running.add(this);
    // A contender that died cannot read its commands; the close event reports the death.
    this.child.stdin.on("error", () => undefined);
    createInterface({ input: this.child.stdout }).on("line", (line) => {
      const message = parseContenderMessage(line);
      if (message === undefined) this.appendDiagnostics(`stdout: ${line}\n`);
      else options.onMessage(message, this);
    });
    this.child.stderr.on("data", (chunk: Buffer) => {
      this.appendDiagnostics(chunk.toString());
    });
    this.closed = new Promise((done) => {
      this.child.once("close", (code, signal) => {
        running.delete(this);
        options.onClose(this, code, signal);
        done();
      });
    });
    this.child.once("error", (error) => {
      this.appendDiagnostics(`spawn failed: ${error.message}\n`);
    });
  }

  /** Kills every contender still running (SIGKILL), synchronously: for exit and signal handlers. */
  static killAll(): void {
    for (const contender of running) contender.kill();
  }

  /** True until the process has exited. */
  get isRunning(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** The end of what the contender wrote on stderr (library warnings, baseline traces), for error messages. */
  get diagnostics(): string {
    return this.stderrTail.trim();
  }

  /** Asks it to shut down gracefully (see {@link RELEASE_COMMAND}). */
  sendRelease(): void {
    this.child.stdin.write(`${RELEASE_COMMAND}\n`);
  }

  /** SIGKILL: no finally blocks, no release; the lease stays until it expires. */
  kill(): void {
    if (this.isRunning) this.child.kill("SIGKILL");
  }

  private appendDiagnostics(text: string): void {
    this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_CHARS);
  }
}
