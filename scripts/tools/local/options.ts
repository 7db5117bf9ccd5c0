import type { Abortable } from "../../../src/library/util/delay";
import { numberFlag, parseFlags, pathFlag, scheduleFlag, UsageError } from "../../support/cli";
import type { LiveMode } from "./liveView";

export { UsageError };

/**
 * The options of a local run: the command line of `npm run local`, parsed and validated up front, and what a caller
 * embedding the runner ({@link RunLocalOptions}) adds.
 */

/** Options of a local run (see {@link parseLocalArgs} for the flags). */
export interface LocalOptions {
  /** Instance processes to start, 1–16. @default 3 */
  instances: number;
  /** Stop after this many seconds; undefined: stop a few seconds after the demo job completes. */
  durationS?: number;
  /** COORDINATOR_SCHEDULE for the instances. @default "*\/5 * * * * *" */
  schedule: string;
  /** Append event JSON lines here. @default `.local/events-<timestamp>.jsonl` */
  eventsPath?: string;
  /** SIGKILL the current leader after this many seconds (survivability demo). */
  killLeaderAfterS?: number;
  /** Items in the demo job, 1–5000. @default 200 */
  items: number;
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
 * early (Ctrl-C), and the result then says "interrupted".
 */
export interface RunLocalOptions extends Partial<LocalOptions>, Abortable {
  /** Base environment of the instances (app settings). @default process.env */
  env?: Record<string, string | undefined>;
  /** Where the live view and summary go. @default process.stdout */
  output?: NodeJS.WritableStream;
  /** @default "tty" when `output` is a TTY and CI is not set, else "plain" */
  live?: LiveMode;
  /** Folder of the default events, timeline and log paths. @default `<repo>/.local` */
  outputDir?: string;
  /** Without `durationS`: give up when the job has not completed after this many seconds. @default 300 */
  maxWaitS?: number;
  /** Without `durationS`: keep running this long after the job completed, so the timeline shows it. @default 5 */
  settleS?: number;
}

/** Usage text for `--help` and after a {@link UsageError}. */
export const USAGE = `Usage: npm run local -- [flags]

Runs the coordinator app locally: Azurite (unless COORDINATION_STORAGE is set), N instance processes, a demo
group-by job, a live view, and a leadership timeline (SVG) at the end.

  --instances N           instance processes, 1–16 (default 3)
  --duration S            stop gracefully after S seconds (default: a few seconds after the job completes)
  --schedule CRON         COORDINATOR_SCHEDULE, NCRONTAB with seconds (default "*/5 * * * * *")
  --events FILE           append events as JSON lines (default .local/events-<timestamp>.jsonl)
  --kill-leader-after S   from S seconds on, SIGKILL a leader mid-job (once items are done, before the job ends)
  --items N               demo job items, 1–5000 (default 200)
  --timeline FILE         where to write the SVG (default .local/timeline-<timestamp>.svg)
  --apps N                function apps the instances form, 1–instances (default 1: one app, so the timer fires on
                          one instance at a time, held by the host's listener lock, as in Azure)
  --listener-lock-period S      the listener lock's lease, 15–60 s (default 60, the host's listenerLockPeriod)
  --listener-lock-recovery S    how often the others poll for it, 0.1–3600 s (default 60, the host's
                                listenerLockRecoveryPollingInterval)
  --help                  show this text

To see a leader die mid-job, make the job span many passes (one item per work message, a few per pass):
  WORK_UNIT_MAX_ITEMS=4 npm run local -- --kill-leader-after 0 --items 2000`;

/**
 * Parses `argv` (without node and script).
 *
 * @returns the options, or "help" when --help was given.
 * @throws UsageError naming the flag and the allowed values.
 */
export function parseLocalArgs(argv: readonly string[]): LocalOptions | "help" {
  const values = parseFlags(argv, {
    instances: { type: "string" },
    duration: { type: "string" },
    schedule: { type: "string" },
    events: { type: "string" },
    "kill-leader-after": { type: "string" },
    items: { type: "string" },
    timeline: { type: "string" },
    apps: { type: "string" },
    "listener-lock-period": { type: "string" },
    "listener-lock-recovery": { type: "string" },
    help: { type: "boolean" },
  });
  if (values.help === true) return "help";
  const durationS = numberFlag(values.duration, "--duration", { min: 1, max: 86_400, integer: false });
  const killLeaderAfterS = numberFlag(values["kill-leader-after"], "--kill-leader-after", {
    min: 0,
    max: 86_400,
    integer: false,
  });
  if (durationS !== undefined && killLeaderAfterS !== undefined && killLeaderAfterS >= durationS) {
    throw new UsageError(`--kill-leader-after (${killLeaderAfterS}) must be less than --duration (${durationS}).`);
  }
  const instances = numberFlag(values.instances, "--instances", { min: 1, max: 16 }) ?? 3;
  const apps = numberFlag(values.apps, "--apps", { min: 1, max: 16 }) ?? 1;
  if (apps > instances) throw new UsageError(`--apps (${apps}) must be at most --instances (${instances}).`);
  return {
    instances,
    apps,
    listenerLockPeriodS: numberFlag(values["listener-lock-period"], "--listener-lock-period", {
      min: 15,
      max: 60,
      integer: false,
    }),
    listenerLockRecoveryS: numberFlag(values["listener-lock-recovery"], "--listener-lock-recovery", {
      min: 0.1,
      max: 3600,
      integer: false,
    }),
    durationS,
    schedule: scheduleFlag(values.schedule, "--schedule", "*/5 * * * * *"),
    eventsPath: pathFlag(values.events, "--events"),
    killLeaderAfterS,
    items: numberFlag(values.items, "--items", { min: 1, max: 5000 }) ?? 200,
    timelinePath: pathFlag(values.timeline, "--timeline"),
  };
}
