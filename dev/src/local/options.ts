import { type Abortable } from "azure-leader-coordinator/internal";
import type { LiveMode } from "./liveView.js";

/**
 * The options of a local run: what `azure-leader-coordinator-dev local` parses from its command line (`src/cli/`), and
 * what a caller embedding the runner ({@link RunLocalOptions}) adds.
 */

/**
 * The job a local run submits once its instances are ready: the built-in group-by demo (checked against an aggregate
 * computed independently), a submission of the app's own kinds (JSON, as `POST /api/jobs` takes it), or none (the
 * instances run until the duration ends or the run is stopped; submit work with `enqueue`).
 */
export type LocalJob =
  { kind: "demo"; items: number } | { kind: "submission"; body: unknown; source: string } | { kind: "none" };

/** Options of a local run (the flags of `azure-leader-coordinator-dev local --help`). */
export interface LocalOptions {
  /** The app's entry file: its compiled JavaScript (TypeScript only with tsx installed in its project). */
  appEntry: string;
  /** The host.json the instances read; undefined: none (every setting at the host's default). */
  hostJsonPath?: string;
  /** What to submit. @default none */
  job: LocalJob;
  /** Instance processes to start, 1–16. @default 3 */
  instances: number;
  /** Stop after this many seconds; undefined: a few seconds after the job ends (without a job: when stopped). */
  durationS?: number;
  /** COORDINATOR_SCHEDULE for the instances. @default "*\/5 * * * * *" */
  schedule: string;
  /** Append event JSON lines here. @default `.local/events-<timestamp>.jsonl` */
  eventsPath?: string;
  /** SIGKILL the current leader after this many seconds, once the job has items done (a job is needed). */
  killLeaderAfterS?: number;
  /** Where to write the timeline SVG. @default `.local/timeline-<timestamp>.svg` */
  timelinePath?: string;
  /**
   * Function apps the instances form, 1–instances (round-robin; app names `local-app-1`, …). One app (the default)
   * fires the timer on one instance at a time, as in Azure; several apps each fire their own. @default 1
   */
  apps: number;
  /** The timer listener lock's lease period, 15–60 s. @default 60 (the host's) */
  listenerLockPeriodS?: number;
  /** How often an instance without the listener lock polls for it, 0.1–3600 s. @default 60 (the host's) */
  listenerLockRecoveryS?: number;
}

/**
 * Options of {@link runLocal}: the CLI's, plus what a caller embedding the runner may set; `abortSignal` stops the run
 * early (Ctrl-C), and the result then says "interrupted" (or, without a job, that the run ended as asked).
 */
export interface RunLocalOptions extends Partial<LocalOptions>, Abortable {
  /** Base environment of the instances (app settings). @default process.env */
  env?: Record<string, string | undefined>;
  /** The app's project folder: where Azurite and tsx are resolved from. @default the current directory */
  projectDir?: string;
  /** Where the live view and summary go. @default process.stdout */
  output?: NodeJS.WritableStream;
  /** @default "tty" when `output` is a TTY and CI is not set, else "plain" */
  live?: LiveMode;
  /** Folder of the default events, timeline and log paths. @default `<projectDir>/.local` */
  outputDir?: string;
  /** Without `durationS`: give up when the job has not ended after this many seconds. @default 300 */
  maxWaitS?: number;
  /** Without `durationS`: keep running this long after the job ended, so the timeline shows it. @default 5 */
  settleS?: number;
}
