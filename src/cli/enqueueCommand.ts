import { randomBytes } from "node:crypto";
import { resolve } from "node:path";
import { hasEnded, type JobStatus } from "../coordination/state/jobStatus.js";
import { delay } from "../library/util/delay.js";
import { isTypeScriptEntry, runningFromSources } from "../local/entryPoints.js";
import { FunctionsHost } from "../local/host.js";
import { JobsHttpApi, jobsBaseUrl } from "../local/jobsHttpApi.js";
import { loadFunctionApp } from "../local/registrations.js";
import { numberFlag, parseFlags, pathFlag, UsageError } from "./flags.js";
import { readJobFile } from "./jobFile.js";

/**
 * `azure-leader-coordinator enqueue`: submits a job of any kind the user's app registers, cancels one, or reads its
 * status — over a deployed (or local) app's HTTP API with a key, or straight to storage through the app's own submit
 * route run in this process (`--app`: the app's task kinds validate the job; no instance of it starts). The routes
 * `--app` serves on 127.0.0.1 while it waits (up to a day) act with the operator's storage identity: only this process
 * reaches them, with a key of its own, and only the ones it calls.
 */

/** Usage text for `enqueue --help` and after a {@link UsageError}. */
export const ENQUEUE_USAGE = `Usage:
  azure-leader-coordinator enqueue --file JOB.json (--url URL [--key KEY] | --app FILE) [--idempotency-key KEY]
                                  [--wait] [--timeout S]
  azure-leader-coordinator enqueue --status JOB_ID (--url URL [--key KEY] | --app FILE)
  azure-leader-coordinator enqueue --cancel JOB_ID (--url URL --key ADMIN_KEY | --app FILE)

Submits a job of any task kind your app registers, and waits for it with --wait (exit 0 when it completes).
JOB.json is what POST /api/jobs takes: {"kind":"…","params":{…},"items":[{"inline":"…"},{"blob":"…"}]}
(or {"kind":…,"params":…,"manifest":"items.ndjson"}, an NDJSON blob in the input container).

  --url URL      your app's HTTP API: the base its routes are under, e.g. https://my-app.azurewebsites.net/api
                 (with your routePrefix: …/api/coordinator), or the URL \`local\` prints
  --key KEY      a function key, sent as x-functions-key (cancel takes the admin key); default AZURE_FUNCTIONS_KEY
  --app FILE     straight to storage instead: loads your app's compiled entry in this process and submits through
                 its own route (its task kinds check the job); storage from COORDINATION_STORAGE (or
                 COORDINATION_STORAGE__blobServiceUri/__queueServiceUri with your az login), as your app reads it
  --host-json FILE   with --app: the host.json for its route prefix (default ./host.json)
  --idempotency-key KEY   submit once: run again with the same KEY and JOB.json, it prints the first job's id
                 instead of making another (sent as the Idempotency-Key header; 1–200 printable ASCII characters)
  --wait         wait until the job ends; print its status and aggregate
  --timeout S    how long --wait waits, 1–86400 s (default 600)
  --help         show this text`;

/** The parsed command line. */
export interface EnqueueArgs {
  readonly action:
    | { kind: "submit"; body: unknown; idempotencyKey?: string }
    | { kind: "status"; id: string }
    | { kind: "cancel"; id: string };
  readonly target: { kind: "url"; url: string; key?: string } | { kind: "app"; entry: string; hostJsonPath?: string };
  readonly wait: boolean;
  readonly timeoutS: number;
}

/**
 * Parses `argv` (after `enqueue`).
 *
 * @throws UsageError naming the flag and what is allowed.
 */
export function parseEnqueueArgs(
  argv: readonly string[],
  env: Record<string, string | undefined> = process.env,
): EnqueueArgs | "help" {
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
    help: { type: "boolean" },
  });
  if (values.help === true) return "help";
  const actions = [values.file, values.status, values.cancel].filter((value) => value !== undefined);
  if (actions.length !== 1)
    throw new UsageError("Give exactly one of --file JOB.json, --status JOB_ID or --cancel JOB_ID.");
  if (values.wait === true && values.file === undefined) throw new UsageError("--wait goes with --file.");
  const idempotencyKey = values["idempotency-key"];
  if (idempotencyKey !== undefined && values.file === undefined)
    throw new UsageError("--idempotency-key goes with --file.");
  if (idempotencyKey !== undefined && !/^[\x20-\x7e]{1,200}$/.test(idempotencyKey))
    throw new UsageError(`--idempotency-key must be 1 to 200 printable ASCII characters, got "${idempotencyKey}".`);
  const action: EnqueueArgs["action"] =
    values.file !== undefined
      ? {
          kind: "submit",
          body: readJobFile(pathFlag(values.file, "--file") ?? values.file, "--file"),
          ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
        }
      : values.status !== undefined
        ? { kind: "status", id: values.status }
        : { kind: "cancel", id: values.cancel ?? "" };
  if ((values.url === undefined) === (values.app === undefined))
    throw new UsageError("Give --url URL (your app's HTTP API) or --app FILE (straight to storage), one of them.");
  let target: EnqueueArgs["target"];
  if (values.url !== undefined) {
    if (!/^https?:\/\/[^/\s]+/i.test(values.url))
      throw new UsageError(
        `--url must be an http(s) URL such as https://my-app.azurewebsites.net/api, got "${values.url}".`,
      );
    if (values["host-json"] !== undefined) throw new UsageError("--host-json goes with --app.");
    const key = values.key ?? env.AZURE_FUNCTIONS_KEY;
    target = { kind: "url", url: values.url, ...(key === undefined || key === "" ? {} : { key }) };
  } else {
    if (values.key !== undefined) throw new UsageError("--key goes with --url: --app needs no key.");
    const entry = resolve(pathFlag(values.app, "--app") ?? "");
    if (isTypeScriptEntry(entry) && !runningFromSources())
      throw new UsageError(
        `--app ${entry} is TypeScript: build your app and name its compiled entry (e.g. --app dist/index.js).`,
      );
    const hostJson = pathFlag(values["host-json"], "--host-json");
    target = { kind: "app", entry, ...(hostJson === undefined ? {} : { hostJsonPath: resolve(hostJson) }) };
  }
  const timeoutS = numberFlag(values.timeout, "--timeout", { min: 1, max: 86_400 }) ?? 600;
  return { action, target, wait: values.wait === true, timeoutS };
}

/** Where the command writes. */
export interface CommandIo {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

/** Runs a parsed `enqueue`; its exit code: 0 done, 1 refused or failed, 3 the job ended other than completed. */
export async function runEnqueue(args: EnqueueArgs, io: CommandIo): Promise<number> {
  let host: FunctionsHost | undefined;
  try {
    let api: JobsHttpApi;
    if (args.target.kind === "url") api = new JobsHttpApi(() => (args.target as { url: string }).url, args.target.key);
    else {
      const app = await loadFunctionApp(args.target.entry);
      const key = randomBytes(32).toString("base64url");
      const started = new FunctionsHost({
        app,
        // The app's own errors are worth showing; its routine lines are not.
        log: (entry) => {
          if (entry.level === "error" || entry.level === "critical") io.stderr.write(`${entry.message}\n`);
        },
        httpOnly: true,
        httpAccess: { key, allows: routesCalled(args.action.kind) },
        hostJsonPath: args.target.hostJsonPath ?? resolve("host.json"),
      });
      host = started;
      await started.start();
      const port = started.httpPort;
      const base = port === undefined ? undefined : jobsBaseUrl(port, started.httpRoutes);
      if (base === undefined)
        throw new Error(`${args.target.entry} registers no job routes (registerCoordinator with http: false?).`);
      api = new JobsHttpApi(() => base, key);
    }
    return await act(api, args, io);
  } finally {
    await host?.stop();
  }
}

/**
 * The job routes `action` calls, by method and template (`api/jobs`, `api/jobs/{id}`): submit and status, and cancel
 * for `--cancel`. Never the leader's (step-down) nor another route of the app.
 */
function routesCalled(action: EnqueueArgs["action"]["kind"]): (method: string, template: string) => boolean {
  return (method, template) =>
    /(^|\/)jobs$/.test(template)
      ? method === "POST"
      : /(^|\/)jobs\/\{[^/}]+\}$/.test(template) && (method === "GET" || (method === "DELETE" && action === "cancel"));
}

async function act(api: JobsHttpApi, args: EnqueueArgs, io: CommandIo): Promise<number> {
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
  if (action.kind === "cancel") {
    const result = await api.cancel(action.id);
    if (result.outcome === "requested") {
      write(`Cancellation of job ${action.id} requested; the leader ends it as cancelled at its next step.`);
      return 0;
    }
    io.stderr.write(
      result.outcome === "not-found"
        ? `No job "${action.id}".\n`
        : result.outcome === "ended"
          ? `Job ${action.id} has already ended (${result.status}); nothing to cancel.\n`
          : `The app refused the cancellation (HTTP ${result.httpStatus}): ${result.error}\n`,
    );
    return 1;
  }
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
  write(
    JSON.stringify(
      {
        id: status.id,
        status: status.status,
        progress: status.progress,
        aggregate: status.aggregate,
        failures: status.failures,
      },
      null,
      2,
    ),
  );
  if (status.status === "completed") return 0;
  io.stderr.write(
    `Job ${status.id} ended as ${status.status}${status.failureReason === undefined ? "" : ` (${status.failureReason})`}.\n`,
  );
  return 3;
}

/** Reads the job's status every second until it has ended. @throws Error after `timeoutS`. */
async function waitForEnd(api: JobsHttpApi, id: string, timeoutS: number): Promise<JobStatus> {
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
