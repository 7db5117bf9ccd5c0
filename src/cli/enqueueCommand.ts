import { resolve } from "node:path";
import { hasEnded, type JobStatus } from "../coordination/state/jobStatus.js";
import { delay } from "../library/util/delay.js";
import { numberFlag, parseFlags, pathFlag, UsageError } from "./flags.js";
import { readJobFile } from "./jobFile.js";
import type { JobsApi } from "./jobsHttpApi.js";
import type { CommandStreams } from "./program.js";

/**
 * `enqueue`: submits a job of any kind the user's app registers, cancels one, or reads its status. The runtime's bin
 * (`azure-leader-coordinator enqueue`) does it over a deployed (or local) app's HTTP API with a key; the development
 * package's bin adds `--app`, which loads the user's app in its own process and goes straight to storage through the
 * app's own routes (`azure-leader-coordinator-dev enqueue --app`). Both parse the same flags here and act the same way
 * ({@link runEnqueue}); only how they reach the routes differs (a {@link JobsApi}).
 */

/** The flags both bins take, for their usage texts (one line each). */
export const ENQUEUE_FLAGS = `  --url URL      your app's HTTP API: the base its routes are under, e.g. https://my-app.azurewebsites.net/api
                 (with your routePrefix: …/api/coordinator), or the URL \`local\` prints
  --key KEY      a function key, sent as x-functions-key (cancel takes the admin key); default AZURE_FUNCTIONS_KEY
  --idempotency-key KEY   submit once: run again with the same KEY and JOB.json, it prints the first job's id
                 instead of making another (sent as the Idempotency-Key header; 1–200 printable ASCII characters)
  --wait         wait until the job ends; print its status and aggregate
  --timeout S    how long --wait waits, 1–86400 s (default 600)
  --job-timeout S       the job expires S seconds after its submission (1–604800), or
  --deadline ISO_TIME   at that time (at most 7 days ahead): the leader ends it as expired
  --fail-on-item-failures   with --wait: exit 4 when the job completed with failed items
  --help         show this text`;

/** The exit codes, for the usage texts. */
export const ENQUEUE_EXIT_CODES = `Exit codes: 0 submitted (with --wait: completed); 1 refused or failed, or (--wait)
--timeout passed with the job still running; 2 a bad command line or job file; 3 (--wait) the job ended other than
completed (failed, cancelled, expired); 4 (--wait --fail-on-item-failures) it completed with failed items.`;

/** Usage text of the runtime's `enqueue --help` (and after a {@link UsageError}). */
export const ENQUEUE_USAGE = `Usage:
  azure-leader-coordinator enqueue --file JOB.json --url URL [--key KEY] [--wait] [--timeout S]
  azure-leader-coordinator enqueue --status JOB_ID --url URL [--key KEY]
  azure-leader-coordinator enqueue --cancel JOB_ID --url URL --key ADMIN_KEY

Submits a job of any task kind your app registers to its HTTP API, and waits for it with --wait.
JOB.json is what POST /api/jobs takes: {"kind":"…","params":{…},"items":[{"inline":"…"},{"blob":"…"}]}
(or {"kind":…,"params":…,"manifest":"items.ndjson"}, an NDJSON blob in the input container).

${ENQUEUE_FLAGS}

${ENQUEUE_EXIT_CODES}
To submit straight to storage through your app's own code (--app), use the development package:
npx azure-leader-coordinator-dev enqueue --app dist/index.js --file JOB.json`;

/** The parsed command line. */
export interface EnqueueArgs {
  readonly action:
    | { kind: "submit"; body: unknown; idempotencyKey?: string }
    | { kind: "status"; id: string }
    | { kind: "cancel"; id: string };
  readonly target: { kind: "url"; url: string; key?: string } | { kind: "app"; entry: string; hostJsonPath?: string };
  readonly wait: boolean;
  readonly timeoutS: number;
  /** With `wait`: exit 4 when the job completed with failed items. */
  readonly failOnItemFailures: boolean;
}

/** Options of {@link parseEnqueueArgs}. */
export interface EnqueueParseOptions {
  /** The app settings (`AZURE_FUNCTIONS_KEY`). @default process.env */
  env?: Record<string, string | undefined>;
  /**
   * Whether `--app FILE` (and `--host-json`) is a target: the development package's bin. Without it, `--app` is refused
   * with where it is. @default false
   */
  withApp?: boolean;
}

/** What `--app` says in the runtime's bin. */
const APP_MOVED =
  "--app runs your app on this machine, which is the development package's part: npm install --save-dev azure-leader-coordinator-dev, then npx azure-leader-coordinator-dev enqueue --app FILE …";

/**
 * Parses `argv` (after `enqueue`).
 *
 * @throws UsageError naming the flag and what is allowed; ConfigurationError for a job file that is not a job.
 */
export function parseEnqueueArgs(argv: readonly string[], options: EnqueueParseOptions = {}): EnqueueArgs | "help" {
  const values = parseFlags(argv, {
    file: { type: "string" },
    status: { type: "string" },
    cancel: { type: "string" },
    url: { type: "string" },
    key: { type: "string" },
    app: { type: "string" },
    "host-json": { type: "string" },
    "idempotency-key": { type: "string" },
    wait: { type: "boolean" },
    timeout: { type: "string" },
    "job-timeout": { type: "string" },
    deadline: { type: "string" },
    "fail-on-item-failures": { type: "boolean" },
    help: { type: "boolean" },
  });
  if (values.help === true) return "help";
  if (options.withApp !== true && (values.app !== undefined || values["host-json"] !== undefined))
    throw new UsageError(APP_MOVED);
  const actions = [values.file, values.status, values.cancel].filter((value) => value !== undefined);
  if (actions.length !== 1)
    throw new UsageError("Give exactly one of --file JOB.json, --status JOB_ID or --cancel JOB_ID.");
  const wait = values.wait === true;
  if (wait && values.file === undefined) throw new UsageError("--wait goes with --file.");
  if (values["fail-on-item-failures"] === true && !wait)
    throw new UsageError("--fail-on-item-failures goes with --wait.");
  const idempotencyKey = values["idempotency-key"];
  if (idempotencyKey !== undefined && values.file === undefined)
    throw new UsageError("--idempotency-key goes with --file.");
  if (idempotencyKey !== undefined && !/^[\x20-\x7e]{1,200}$/.test(idempotencyKey))
    throw new UsageError(`--idempotency-key must be 1 to 200 printable ASCII characters, got "${idempotencyKey}".`);
  const deadline = deadlineOf(values["job-timeout"], values.deadline);
  if (values.file === undefined && Object.keys(deadline).length > 0)
    throw new UsageError("--job-timeout and --deadline go with --file.");
  const action: EnqueueArgs["action"] =
    values.file !== undefined
      ? {
          kind: "submit",
          body: withDeadline(readJobFile(pathFlag(values.file, "--file") ?? values.file, "--file"), deadline),
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
        }
      : values.status !== undefined
        ? { kind: "status", id: values.status }
        : { kind: "cancel", id: values.cancel ?? "" };
  const timeoutS = numberFlag(values.timeout, "--timeout", { min: 1, max: 86_400 }) ?? 600;
  const target = targetOf(values, options);
  return { action, target, wait, timeoutS, failOnItemFailures: values["fail-on-item-failures"] === true };
}

/** `--url` (with its key) or, in the development package's bin, `--app`. */
function targetOf(
  values: { url?: string; key?: string; app?: string; "host-json"?: string },
  options: EnqueueParseOptions,
): EnqueueArgs["target"] {
  if ((values.url === undefined) === (values.app === undefined))
    throw new UsageError(
      options.withApp === true
        ? "Give --url URL (your app's HTTP API) or --app FILE (straight to storage), one of them."
        : "Give --url URL: your app's HTTP API.",
    );
  if (values.url !== undefined) {
    if (!/^https?:\/\/[^/\s]+/i.test(values.url))
      throw new UsageError(
        `--url must be an http(s) URL such as https://my-app.azurewebsites.net/api, got "${values.url}".`,
      );
    if (values["host-json"] !== undefined) throw new UsageError("--host-json goes with --app.");
    const key = values.key ?? (options.env ?? process.env).AZURE_FUNCTIONS_KEY;
    return { kind: "url", url: values.url, ...(key === undefined || key === "" ? {} : { key }) };
  }
  if (values.key !== undefined) throw new UsageError("--key goes with --url: --app needs no key.");
  const entry = resolve(pathFlag(values.app, "--app") ?? "");
  const hostJson = pathFlag(values["host-json"], "--host-json");
  return { kind: "app", entry, ...(hostJson === undefined ? {} : { hostJsonPath: resolve(hostJson) }) };
}

/** `--job-timeout` or `--deadline` as submission fields (the app checks their range with the rest of the job). */
function deadlineOf(jobTimeout: string | undefined, deadline: string | undefined): Record<string, unknown> {
  if (jobTimeout !== undefined && deadline !== undefined)
    throw new UsageError("Give --job-timeout S or --deadline ISO_TIME, not both.");
  if (jobTimeout !== undefined)
    return { timeoutS: numberFlag(jobTimeout, "--job-timeout", { min: 1, max: 7 * 24 * 3600 }) };
  if (deadline === undefined) return {};
  if (Number.isNaN(Date.parse(deadline)))
    throw new UsageError(`--deadline must be an ISO 8601 time such as 2026-05-01T12:00:00Z, got "${deadline}".`);
  return { deadline };
}

/** The job file's submission with the deadline flags on top (the file's own fields give way to them). */
function withDeadline(body: unknown, deadline: Record<string, unknown>): unknown {
  if (Object.keys(deadline).length === 0 || typeof body !== "object" || body === null || Array.isArray(body))
    return body;
  const fields = Object.entries(body).filter(([name]) => name !== "timeoutS" && name !== "deadline");
  return { ...Object.fromEntries(fields), ...deadline };
}

/** Where the command writes. */
export type CommandIo = CommandStreams;

/**
 * Runs a parsed `enqueue` through `api` (the app's routes). Its exit code: 0 done, 1 refused or failed, 3 the job
 * ended other than completed, 4 it completed with failed items and `failOnItemFailures` was asked.
 */
export async function runEnqueue(args: EnqueueArgs, io: CommandIo, api: JobsApi): Promise<number> {
  const write = (text: string): void => void io.stdout.write(`${text}\n`);
  const action = args.action;
  if (action.kind === "status") {
    const status = await api.getJob(action.id);
    if (status === undefined) {
      io.stderr.write(`No job "${action.id}".\n`);
      return 1;
    }
    write(JSON.stringify(status, null, 2));
    return 0;
  }
  if (action.kind === "cancel") return cancel(api, action.id, io);
  const submitted = await api.submit(
    action.body,
    action.idempotencyKey === undefined ? {} : { idempotencyKey: action.idempotencyKey },
  );
  if (!submitted.ok) {
    const fields = submitted.errors.map((error) => `\n  ${error.field}: ${error.message}`).join("");
    io.stderr.write(`The job was not submitted (HTTP ${submitted.httpStatus}): ${submitted.error}${fields}\n`);
    return 1;
  }
  write(
    submitted.replayed === true
      ? `Job ${submitted.id} (${submitted.itemCount} items) was submitted before with this idempotency key.`
      : `Submitted job ${submitted.id} with ${submitted.itemCount} items.`,
  );
  if (!args.wait) return 0;
  const status = await waitForEnd(api, submitted.id, args.timeoutS);
  const { id, progress, aggregate, failures } = status;
  write(JSON.stringify({ id, status: status.status, progress, aggregate, failures }, null, 2));
  if (status.status !== "completed") {
    const reason = status.failureReason === undefined ? "" : ` (${status.failureReason})`;
    io.stderr.write(`Job ${status.id} ended as ${status.status}${reason}.\n`);
    return 3;
  }
  if (args.failOnItemFailures && progress.failed > 0) {
    io.stderr.write(`Job ${status.id} completed with ${progress.failed} of ${progress.total} items failed.\n`);
    return 4;
  }
  return 0;
}

async function cancel(api: JobsApi, id: string, io: CommandIo): Promise<number> {
  const result = await api.cancel(id);
  if (result.outcome === "requested") {
    io.stdout.write(`Cancellation of job ${id} requested; the leader ends it as cancelled at its next step.\n`);
    return 0;
  }
  io.stderr.write(
    result.outcome === "not-found"
      ? `No job "${id}".\n`
      : result.outcome === "ended"
        ? `Job ${id} has already ended (${result.status}); nothing to cancel.\n`
        : `The app refused the cancellation (HTTP ${result.httpStatus}): ${result.error}\n`,
  );
  return 1;
}

/** Reads the job's status every second until it has ended. @throws Error after `timeoutS`. */
async function waitForEnd(api: JobsApi, id: string, timeoutS: number): Promise<JobStatus> {
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    const status = await api.getJob(id);
    if (status !== undefined && hasEnded(status.status)) return status;
    if (Date.now() > deadline)
      throw new Error(
        `Job ${id} did not end within ${timeoutS} s; is a coordinator running (local, or the deployed app)?`,
      );
    await delay(1000);
  }
}
