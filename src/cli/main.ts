import { ConfigurationError } from "../library/errors.js";
import { assertSupportedNode } from "../library/nodeVersion.js";
import { runLocal } from "../local/run.js";
import { ENQUEUE_USAGE, parseEnqueueArgs, runEnqueue, type CommandIo } from "./enqueueCommand.js";
import { UsageError } from "./flags.js";
import { LOCAL_USAGE, parseLocalArgs } from "./localCommand.js";

/**
 * The command line of `azure-leader-coordinator` (the package's `bin`, `bin.ts`): `local` runs the user's app as
 * several instances on Azurite, `enqueue` submits a job of any of its kinds. Returns exit codes and writes to the
 * streams it is given; nothing here exits the process.
 */

/** Usage of the command itself. */
export const USAGE = `Usage: azure-leader-coordinator <command> [flags]

Commands:
  local     run your Function app as N instances on an embedded Azurite, with a live view, the status page and a
            leadership timeline (azure-leader-coordinator local --help)
  enqueue   submit a job of any of your app's task kinds, over its HTTP API or straight to storage, and wait for
            it (azure-leader-coordinator enqueue --help)

Exit codes: 0 done; 1 failed; 2 a bad command line; 3 (enqueue --wait) the job ended other than completed.`;

/** Options of {@link main}: where it writes, and the defaults a caller may give `local` (this repository's demo). */
export interface MainOptions extends Partial<CommandIo> {
  /** Stops a `local` run gracefully (Ctrl-C). */
  abortSignal?: AbortSignal;
}

/** Runs the command line `argv` (after node and the script) and returns its exit code. */
export async function main(argv: readonly string[], options: MainOptions = {}): Promise<number> {
  const io: CommandIo = { stdout: options.stdout ?? process.stdout, stderr: options.stderr ?? process.stderr };
  const [command, ...rest] = argv;
  if (command === undefined || command === "--help" || command === "-h" || command === "help") {
    io.stdout.write(`${USAGE}\n`);
    return command === undefined ? 2 : 0;
  }
  const usage = command === "local" ? LOCAL_USAGE : command === "enqueue" ? ENQUEUE_USAGE : USAGE;
  try {
    assertSupportedNode();
    if (command === "local") {
      const parsed = parseLocalArgs(rest);
      if (parsed === "help") return help(io, usage);
      const result = await runLocal({ ...parsed, output: io.stdout, abortSignal: options.abortSignal });
      return result.exitCode;
    }
    if (command === "enqueue") {
      const parsed = parseEnqueueArgs(rest);
      if (parsed === "help") return help(io, usage);
      return await runEnqueue(parsed, io);
    }
    throw new UsageError(`Unknown command "${command}"; the commands are local and enqueue.`);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`${error.message}\n\n${usage}\n`);
      return 2;
    }
    if (error instanceof ConfigurationError) {
      io.stderr.write(`${error.message}\n`);
      return 2;
    }
    io.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
}

function help(io: CommandIo, usage: string): number {
  io.stdout.write(`${usage}\n`);
  return 0;
}

/**
 * Runs {@link main} as this process's command: Ctrl-C (SIGINT, SIGTERM) stops a `local` run gracefully (a second one
 * says it is in progress); the process exits with the command's code once its output is flushed.
 */
export function runAsProcess(argv: readonly string[]): void {
  const controller = new AbortController();
  const interrupt = (): void => {
    if (controller.signal.aborted) {
      process.stderr.write("\nStopping is in progress (waiting for instances to finish their invocations).\n");
      return;
    }
    process.stderr.write("\nStopping gracefully…\n");
    controller.abort();
  };
  process.on("SIGINT", interrupt);
  process.on("SIGTERM", interrupt);
  const exit = (code: number): void => {
    process.stdout.write("", () => process.exit(code));
  };
  main(argv, { abortSignal: controller.signal }).then(exit, (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    exit(1);
  });
}
