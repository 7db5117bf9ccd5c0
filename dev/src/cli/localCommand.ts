import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { LocalJob, LocalOptions } from "../local/options.js";
import { numberFlag, parseFlags, pathFlag, readJobFile, UsageError } from "azure-leader-coordinator/internal";
import { scheduleFlag } from "./scheduleFlag.js";

/**
 * `azure-leader-coordinator-dev local`: the command line of a local run of the user's app (`src/local/run.ts` does the
 * run). Parsed and checked up front; a bad flag is a {@link UsageError} naming it and what is allowed.
 */

/** Usage text for `local --help` and after a {@link UsageError}. */
export const LOCAL_USAGE = `Usage: azure-leader-coordinator-dev local [flags]

Runs your Function app on this machine as N instances (separate processes) of a small Functions host, on an
embedded Azurite (unless COORDINATION_STORAGE is set), with your host.json: the instances elect a leader, and you
watch it lead, lose the lease and finish jobs — a live view, the status page, and a leadership timeline (SVG) at
the end. App settings (WORK_UNIT_MAX_ITEMS, your own, …) come from the environment.

  --app FILE              your app's entry: its compiled JavaScript (default: "main" of ./package.json); a
                          TypeScript entry runs only with tsx installed in your project
  --host-json FILE        the host.json the instances read (default ./host.json); what it lacks is said at start
  --job FILE              submit this job once the instances are ready (JSON, as POST /api/jobs takes it:
                          {"kind":"…","params":{…},"items":[{"inline":"…"}]}); stop a few seconds after it ends
  --demo                  submit the built-in group-by demo job instead (your app must register groupByKind)
  --items N               with --demo: its items, 1–5000 (default 200)
  --instances N           instance processes, 1–16 (default 3)
  --duration S            stop gracefully after S seconds (default: a few seconds after the job ends; without a
                          job, at Ctrl-C)
  --kill-leader-after S   from S seconds on, SIGKILL a leader mid-job (once items are done, before the job ends)
  --schedule CRON         COORDINATOR_SCHEDULE, NCRONTAB with seconds (default "*/5 * * * * *")
  --events FILE           append events as JSON lines (default .local/events-<timestamp>.jsonl)
  --timeline FILE         where to write the SVG (default .local/timeline-<timestamp>.svg)
  --apps N                function apps the instances form, 1–instances (default 1: one app, so the timer fires on
                          one instance at a time, held by the host's listener lock, as in Azure)
  --listener-lock-period S      the listener lock's lease, 15–60 s (default 60, the host's listenerLockPeriod)
  --listener-lock-recovery S    how often the others poll for it, 0.1–3600 s (default 60, the host's
                                listenerLockRecoveryPollingInterval)
  --help                  show this text

Azurite comes with this package. Without --job or --demo, submit work with azure-leader-coordinator enqueue
(the URL is printed at start).
To see a leader die mid-job, make the job span many passes (one item per work message, a few per pass):
  WORK_UNIT_MAX_ITEMS=1 DISPATCH_BATCH_SIZE=4 azure-leader-coordinator-dev local --job job.json --kill-leader-after 0`;

/**
 * Parses `argv` (after `local`) in the project folder `cwd`.
 *
 * @returns the options, or "help" when --help was given.
 * @throws UsageError naming the flag and the allowed values.
 */
export function parseLocalArgs(argv: readonly string[], cwd: string = process.cwd()): LocalOptions | "help" {
  const values = parseFlags(argv, {
    app: { type: "string" },
    "host-json": { type: "string" },
    job: { type: "string" },
    demo: { type: "boolean" },
    items: { type: "string" },
    instances: { type: "string" },
    duration: { type: "string" },
    schedule: { type: "string" },
    events: { type: "string" },
    "kill-leader-after": { type: "string" },
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
  if (durationS !== undefined && killLeaderAfterS !== undefined && killLeaderAfterS >= durationS)
    throw new UsageError(`--kill-leader-after (${killLeaderAfterS}) must be less than --duration (${durationS}).`);
  const instances = numberFlag(values.instances, "--instances", { min: 1, max: 16 }) ?? 3;
  const apps = numberFlag(values.apps, "--apps", { min: 1, max: 16 }) ?? 1;
  if (apps > instances) throw new UsageError(`--apps (${apps}) must be at most --instances (${instances}).`);
  const job = jobOf(values.job, values.demo === true, values.items);
  if (killLeaderAfterS !== undefined && job.kind === "none")
    throw new UsageError("--kill-leader-after needs a job to kill the leader during: give --job FILE or --demo.");
  return {
    appEntry: appEntryOf(pathFlag(values.app, "--app"), cwd),
    hostJsonPath: hostJsonOf(pathFlag(values["host-json"], "--host-json"), cwd),
    job,
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
    timelinePath: pathFlag(values.timeline, "--timeline"),
  };
}

function jobOf(file: string | undefined, demo: boolean, items: string | undefined): LocalJob {
  if (file !== undefined && demo) throw new UsageError("Give --job FILE or --demo, not both.");
  if (items !== undefined && !demo) throw new UsageError("--items is the demo job's size: it needs --demo.");
  if (demo) return { kind: "demo", items: numberFlag(items, "--items", { min: 1, max: 5000 }) ?? 200 };
  if (file === undefined) return { kind: "none" };
  return { kind: "submission", body: readJobFile(pathFlag(file, "--job") ?? file, "--job"), source: file };
}

/** `--app`, else "main" of the project's package.json. @throws UsageError when neither names an existing file. */
function appEntryOf(flag: string | undefined, cwd: string): string {
  if (flag !== undefined) {
    const entry = resolve(cwd, flag);
    if (!existsSync(entry)) throw new UsageError(`--app ${flag}: no such file (${entry}). Build your app first?`);
    return entry;
  }
  const manifest = join(cwd, "package.json");
  const main = existsSync(manifest)
    ? (JSON.parse(readFileSync(manifest, "utf8")) as { main?: unknown }).main
    : undefined;
  if (typeof main !== "string" || main.trim() === "")
    throw new UsageError(
      `No app entry: ${manifest} has no "main". Name your app's compiled entry with --app (e.g. --app dist/index.js).`,
    );
  const entry = resolve(cwd, main);
  if (!existsSync(entry))
    throw new UsageError(
      `Your app's entry ${main} ("main" of ${manifest}) does not exist: build your app first (e.g. npm run build), or name another with --app.`,
    );
  return entry;
}

/** `--host-json` (which must exist), else ./host.json when there is one. */
function hostJsonOf(flag: string | undefined, cwd: string): string | undefined {
  if (flag !== undefined) {
    const path = resolve(cwd, flag);
    if (!existsSync(path)) throw new UsageError(`--host-json ${flag}: no such file (${path}).`);
    return path;
  }
  const path = join(cwd, "host.json");
  return existsSync(path) ? path : undefined;
}
