import { ConfigurationError } from "../library/errors.js";
import { assertSupportedNode } from "../library/nodeVersion.js";
import { UsageError } from "./flags.js";

/**
 * A command line of commands (`<bin> <command> [flags]`): the runtime package's `azure-leader-coordinator` (`enqueue`)
 * and the development package's `azure-leader-coordinator-dev` (`local`, `enqueue`, `package`) run through it. It
 * prints the usage for `--help`, a bad command line's message with its command's usage (exit 2), a bad input's message
 * alone (exit 2), and any other failure's message (exit 1). Nothing here exits the process but
 * {@link runProgramAsProcess}.
 */

/** Where a command writes. */
export interface CommandStreams {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

/** One command of a {@link Program}. */
export interface Command {
  /** Its usage text: what `<bin> <command> --help` prints. */
  readonly usage: string;
  /**
   * Runs the command with its flags (after the command's name); returns the exit code, or "help" when the flags asked
   * for the usage.
   *
   * @throws UsageError for a bad command line (printed with the usage); ConfigurationError for bad input (a job file
   *   that is not a job), printed alone.
   */
  run(argv: readonly string[], streams: CommandStreams, abortSignal: AbortSignal | undefined): Promise<number | "help">;
}

/** A bin's commands and its own usage. */
export interface Program {
  /** What `<bin> --help` prints. */
  readonly usage: string;
  readonly commands: Readonly<Record<string, Command>>;
  /**
   * Commands this bin does not have, with where they are (printed instead of the usage, exit 2): the runtime's bin
   * says `local` is in the development package.
   */
  readonly movedCommands?: Readonly<Record<string, string>>;
}

/** Options of {@link runProgram}: where it writes, and a signal that stops a long command gracefully (Ctrl-C). */
export interface ProgramOptions extends Partial<CommandStreams> {
  abortSignal?: AbortSignal;
}

/** Runs `argv` (after node and the script) through the program; returns the exit code. */
export async function runProgram(
  program: Program,
  argv: readonly string[],
  options: ProgramOptions = {},
): Promise<number> {
  const streams: CommandStreams = {
    stdout: options.stdout ?? process.stdout,
    stderr: options.stderr ?? process.stderr,
  };
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    streams.stdout.write(`${program.usage}\n`);
    return name === undefined ? 2 : 0;
  }
  const moved = program.movedCommands?.[name];
  if (moved !== undefined) {
    streams.stderr.write(`${moved}\n`);
    return 2;
  }
  const command = program.commands[name];
  const usage = command?.usage ?? program.usage;
  try {
    assertSupportedNode();
    if (command === undefined)
      throw new UsageError(`Unknown command "${name}"; the commands are ${Object.keys(program.commands).join(", ")}.`);
    const code = await command.run(rest, streams, options.abortSignal);
    if (code !== "help") return code;
    streams.stdout.write(`${usage}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      streams.stderr.write(`${error.message}\n\n${usage}\n`);
      return 2;
    }
    streams.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return error instanceof ConfigurationError ? 2 : 1;
  }
}

/**
 * Runs the program as this process's command: Ctrl-C (SIGINT, SIGTERM) stops a long command gracefully (a second one
 * says it is in progress); the process exits with the command's code once its output is flushed.
 */
export function runProgramAsProcess(program: Program, argv: readonly string[]): void {
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
  runProgram(program, argv, { abortSignal: controller.signal }).then(exit, (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    exit(1);
  });
}
