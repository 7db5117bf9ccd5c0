import {
  ENQUEUE_EXIT_CODES,
  ENQUEUE_FLAGS,
  JobsHttpApi,
  parseEnqueueArgs,
  runEnqueue,
  runProgram,
  runProgramAsProcess,
  type Program,
  type ProgramOptions,
} from "azure-leader-coordinator/internal";
import { runLocal } from "../local/run.js";
import { openAppJobsApi } from "./enqueueApp.js";
import { checkLocalJob } from "./localCheck.js";
import { LOCAL_USAGE, parseLocalArgs } from "./localCommand.js";
import { PACKAGE_USAGE, runPackage } from "./packageCommand.js";

/**
 * The command line of `azure-leader-coordinator-dev` (the development package's `bin`, `bin.ts`): `local` runs the
 * user's app as several instances on Azurite, `enqueue` submits a job over the app's HTTP API or, with `--app`,
 * straight to storage through the app's own code in this process, `package` builds the folder to deploy. Returns exit
 * codes and writes to the streams it is given; nothing here exits the process.
 */

/** Usage of the command itself. */
export const DEV_USAGE = `Usage: azure-leader-coordinator-dev <command> [flags]

Commands:
  local     run your Function app as N instances on an embedded Azurite, with a live view, the status page and a
            leadership timeline (azure-leader-coordinator-dev local --help)
  enqueue   submit a job of any of your app's task kinds — over its HTTP API (--url), or straight to storage through
            your app's own code in this process (--app) — and wait for it (azure-leader-coordinator-dev enqueue --help)
  package   build the folder to deploy: your build output, host.json and production dependencies only
            (azure-leader-coordinator-dev package --help)

Exit codes: 0 done; 1 failed; 2 a bad command line or input; 3 and 4: enqueue --help.`;

/** Usage of the development package's `enqueue`: the runtime's, with `--app`. */
export const DEV_ENQUEUE_USAGE = `Usage:
  azure-leader-coordinator-dev enqueue --file JOB.json (--url URL [--key KEY] | --app FILE) [--wait] [--timeout S]
  azure-leader-coordinator-dev enqueue --status JOB_ID (--url URL [--key KEY] | --app FILE)
  azure-leader-coordinator-dev enqueue --cancel JOB_ID (--url URL --key ADMIN_KEY | --app FILE)

Submits a job of any task kind your app registers, and waits for it with --wait.
JOB.json is what POST /api/jobs takes: {"kind":"…","params":{…},"items":[{"inline":"…"},{"blob":"…"}]}
(or {"kind":…,"params":…,"manifest":"items.ndjson"}, an NDJSON blob in the input container).

  --app FILE     straight to storage instead of --url: loads your app's compiled entry in this process and submits
                 through its own route (its task kinds check the job); storage from COORDINATION_STORAGE (or
                 COORDINATION_STORAGE__blobServiceUri/__queueServiceUri with your az login), as your app reads it.
                 No port is opened: nothing but this command reaches your app's routes.
  --host-json FILE   with --app: the host.json for its route prefix (default ./host.json)
${ENQUEUE_FLAGS}

${ENQUEUE_EXIT_CODES}`;

/** The development package's program. */
export const DEV_PROGRAM: Program = {
  usage: DEV_USAGE,
  commands: {
    local: {
      usage: LOCAL_USAGE,
      async run(argv, streams, abortSignal) {
        const parsed = parseLocalArgs(argv);
        if (parsed === "help") return "help";
        await checkLocalJob(parsed);
        const result = await runLocal({ ...parsed, output: streams.stdout, abortSignal });
        return result.exitCode;
      },
    },
    enqueue: {
      usage: DEV_ENQUEUE_USAGE,
      async run(argv, streams) {
        const args = parseEnqueueArgs(argv, { withApp: true });
        if (args === "help") return "help";
        const target = args.target;
        if (target.kind === "url") return runEnqueue(args, streams, new JobsHttpApi(() => target.url, target.key));
        const opened = await openAppJobsApi(target, args.action.kind, (line) => streams.stderr.write(`${line}\n`));
        try {
          return await runEnqueue(args, streams, opened.api);
        } finally {
          await opened.stop();
        }
      },
    },
    package: { usage: PACKAGE_USAGE, run: (argv, streams) => runPackage(argv, streams) },
  },
};

/** Runs the command line `argv` (after node and the script) and returns its exit code. */
export function main(argv: readonly string[], options: ProgramOptions = {}): Promise<number> {
  return runProgram(DEV_PROGRAM, argv, options);
}

/** Runs {@link main} as this process's command, exiting with its code. */
export function runDevAsProcess(argv: readonly string[]): void {
  runProgramAsProcess(DEV_PROGRAM, argv);
}
