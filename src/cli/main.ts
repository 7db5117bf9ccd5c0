import { ENQUEUE_USAGE, parseEnqueueArgs, runEnqueue } from "./enqueueCommand.js";
import { JobsHttpApi } from "./jobsHttpApi.js";
import { runProgram, runProgramAsProcess, type Program, type ProgramOptions } from "./program.js";

/**
 * The command line of `azure-leader-coordinator` (the runtime package's `bin`, `bin.ts`): `enqueue` submits a job of
 * any of the app's kinds to a deployed (or local) app's HTTP API. Running the app locally (`local`, `enqueue --app`) is
 * the development package's bin, `azure-leader-coordinator-dev`. Returns exit codes and writes to the streams it is
 * given; nothing here exits the process.
 */

/** Usage of the command itself. */
export const USAGE = `Usage: azure-leader-coordinator <command> [flags]

Commands:
  enqueue   submit a job of any of your app's task kinds to its HTTP API, read its status, cancel it, and wait for
            it (azure-leader-coordinator enqueue --help)

Running your app on this machine (local) and submitting straight to storage (enqueue --app) are commands of the
development package: npm install --save-dev azure-leader-coordinator-dev; npx azure-leader-coordinator-dev --help.

Exit codes: 0 done; 1 failed; 2 a bad command line or input; 3 and 4: enqueue --help.`;

/** The runtime's program: `enqueue` over HTTP. */
export const RUNTIME_PROGRAM: Program = {
  usage: USAGE,
  commands: {
    enqueue: {
      usage: ENQUEUE_USAGE,
      async run(argv, streams) {
        const args = parseEnqueueArgs(argv);
        if (args === "help") return "help";
        // Only --url reaches here: without withApp the parser refuses --app.
        const target = args.target.kind === "url" ? args.target : { url: "", key: undefined };
        return runEnqueue(args, streams, new JobsHttpApi(() => target.url, target.key));
      },
    },
  },
  movedCommands: {
    local:
      "`local` runs your app on this machine, which is the development package's part (since 0.2.0): npm install --save-dev azure-leader-coordinator-dev, then npx azure-leader-coordinator-dev local [flags] (the same flags).",
  },
};

/** Runs the command line `argv` (after node and the script) and returns its exit code. */
export function main(argv: readonly string[], options: ProgramOptions = {}): Promise<number> {
  return runProgram(RUNTIME_PROGRAM, argv, options);
}

/** Runs {@link main} as this process's command, exiting with its code. */
export function runAsProcess(argv: readonly string[]): void {
  runProgramAsProcess(RUNTIME_PROGRAM, argv);
}
