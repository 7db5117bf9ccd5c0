/**
 * Submit a job from the command line and optionally wait for it:
 *
 *   npm run enqueue -- --file job.json [--wait] npm run enqueue -- --prefix sales/2026/ --kind group-by --params
 *   '{"format":"csv","keyField":"region","valueField":"amount"}' [--wait] npm run enqueue -- --manifest items.ndjson
 *   --kind group-by --params '{…}' [--wait] npm run enqueue -- --file job.json --job-timeout 3600 (or --deadline
 *   2026-05-01T12:00:00Z: the job expires then) npm run enqueue -- --cancel JOB_ID
 *
 * Storage comes from COORDINATION_STORAGE (a connection string) or
 * COORDINATION_STORAGE__blobServiceUri/__queueServiceUri (managed identity / az login through DefaultAzureCredential),
 * like the app itself.
 */
import { randomUUID } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { basename, extname } from "node:path";
import { SingleBar, Presets } from "cli-progress";
import { type CoordinatorApp } from "../../src/app/context";
import { createRepoApp } from "../support/repoKinds";
import { cancelJob, getJobStatus, hasEnded, submitJob } from "../../src/app/jobs";
import { CONNECTION_SETTINGS } from "../../src/app/settings";
import { MAX_MANIFEST_BYTES } from "../../src/coordination/jobs/manifest";
import { connectionFromSettings, createStorageClients } from "../../src/azure/clients";
import { storageFailure } from "../../src/azure/storageErrors";
import { delay } from "../../src/library/util/delay";
import { numberFlag, parseFlags, UsageError } from "../../src/cli/flags";

export const USAGE = `Usage:
  npm run enqueue -- --file JOB.json [DEADLINE] [--wait] [--timeout SECONDS]
  npm run enqueue -- --prefix BLOB_PREFIX --kind KIND --params JSON [DEADLINE] [--wait] [--timeout SECONDS]
  npm run enqueue -- --manifest ITEMS.ndjson --kind KIND --params JSON [DEADLINE] [--wait] [--timeout SECONDS]
  npm run enqueue -- --cancel JOB_ID
JOB.json: {"kind":"group-by","params":{"format":"csv","keyField":"region","valueField":"amount"},"items":[{"inline":"region,amount\\neu,3"},{"blob":"sales/a.csv"}]}
  or, naming a manifest already in the input container: {"kind":…,"params":…,"manifest":"manifests/big.ndjson"}
--prefix makes one item per blob under the prefix in the input container (INPUT_CONTAINER).
--manifest uploads ITEMS.ndjson (one item a line, {"inline":"…"} or {"blob":"…"}; at most ${MAX_MANIFEST_BYTES / 1024 / 1024} MiB) to
  manifests/ in the input container and submits a job naming it.
DEADLINE: --job-timeout SECONDS or --deadline ISO_TIME: the leader ends the job as expired then (at most 7 days ahead).
--timeout: how long --wait waits (default 600 s). --cancel: the leader ends the job as cancelled at its next step.`;

/** Parses and checks the flags; throws a UsageError naming what is wrong (main prints it with the usage). */
export function parseEnqueueArgs(argv: string[]): {
  file?: string;
  prefix?: string;
  manifest?: string;
  kind?: string;
  params?: string;
  wait: boolean;
  timeoutS: number;
  cancel?: string;
  jobTimeoutS?: number;
  deadline?: string;
} {
  const values = parseFlags(argv, {
    file: { type: "string" },
    prefix: { type: "string" },
    manifest: { type: "string" },
    kind: { type: "string" },
    params: { type: "string" },
    wait: { type: "boolean", default: false },
    timeout: { type: "string", default: "600" },
    "job-timeout": { type: "string" },
    deadline: { type: "string" },
    cancel: { type: "string" },
  });
  if (values.cancel !== undefined) {
    const others = [
      values.file,
      values.prefix,
      values.manifest,
      values.kind,
      values.params,
      values["job-timeout"],
      values.deadline,
    ].some((value) => value !== undefined);
    if (others || values.wait) throw new UsageError("--cancel takes no other flag.");
    return { wait: false, timeoutS: 0, cancel: values.cancel };
  }
  const timeoutS = numberFlag(values.timeout, "--timeout", { min: 1, max: 86_400 }) ?? 600;
  const sources = [values.file, values.prefix, values.manifest].filter((value) => value !== undefined);
  if (sources.length !== 1) throw new UsageError("Give exactly one of --file, --prefix or --manifest.");
  for (const [flag, value] of [
    ["--prefix", values.prefix],
    ["--manifest", values.manifest],
  ] as const) {
    if (value !== undefined && (values.kind === undefined || values.params === undefined))
      throw new UsageError(`${flag} needs --kind and --params.`);
  }
  // Checked with the rest of the submission (whole seconds, at most 7 days); a flag that is not a number is refused
  // here.
  const jobTimeoutS = numberFlag(values["job-timeout"], "--job-timeout", {
    min: -Number.MAX_VALUE,
    max: Number.MAX_VALUE,
    integer: false,
  });
  return {
    file: values.file,
    prefix: values.prefix,
    manifest: values.manifest,
    kind: values.kind,
    params: values.params,
    wait: values.wait,
    timeoutS,
    jobTimeoutS,
    deadline: values.deadline,
  };
}

async function buildBody(app: CoordinatorApp, args: ReturnType<typeof parseEnqueueArgs>): Promise<unknown> {
  const deadline = {
    ...(args.jobTimeoutS !== undefined ? { timeoutS: args.jobTimeoutS } : {}),
    ...(args.deadline !== undefined ? { deadline: args.deadline } : {}),
  };
  if (args.file !== undefined) return { ...(JSON.parse(readFileSync(args.file, "utf8")) as object), ...deadline };
  const params = JSON.parse(args.params ?? "{}") as unknown;
  if (args.manifest !== undefined)
    return { kind: args.kind, params, manifest: await uploadManifest(app, args.manifest), ...deadline };
  // The input container holds only the user's blobs: every blob under the prefix is an item.
  const names = await app.inputs.list(args.prefix ?? "", 1_000_001);
  if (names.length === 0)
    throw new Error(`No blobs under "${args.prefix ?? ""}" in container ${app.settings.INPUT_CONTAINER}.`);
  return { kind: args.kind, params, items: names.map((blob) => ({ blob })), ...deadline };
}

/**
 * Uploads a local NDJSON file to `manifests/` in the input container (as its owner: the app itself only reads there);
 * returns the blob name.
 */
async function uploadManifest(app: CoordinatorApp, file: string): Promise<string> {
  const size = statSync(file).size;
  if (size > MAX_MANIFEST_BYTES)
    throw new Error(
      `${file} is ${size} bytes; a manifest may have at most ${MAX_MANIFEST_BYTES} bytes (${MAX_MANIFEST_BYTES / 1024 / 1024} MiB).`,
    );
  const name = `manifests/${basename(file, extname(file)).replace(/[^\w.-]/g, "_")}-${randomUUID().slice(0, 8)}.ndjson`;
  const { blob } = createStorageClients(connectionFromSettings(CONNECTION_SETTINGS.coordination));
  try {
    await blob
      .getContainerClient(app.settings.INPUT_CONTAINER)
      .getBlockBlobClient(name)
      .uploadFile(file, { blobHTTPHeaders: { blobContentType: "application/x-ndjson" } });
  } catch (error) {
    if (storageFailure(error).code === "ContainerNotFound")
      throw new Error(
        `The input container ${app.settings.INPUT_CONTAINER} does not exist; create it (the Bicep templates and npm run local do).`,
      );
    throw error;
  }
  process.stdout.write(`Uploaded ${file} (${size} bytes) as ${name} in ${app.settings.INPUT_CONTAINER}.\n`);
  return name;
}

async function main(): Promise<void> {
  if (process.argv.slice(2).some((arg) => arg === "--help" || arg === "-h")) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const args = parseEnqueueArgs(process.argv.slice(2));
  const app = createRepoApp();
  if (args.cancel !== undefined) {
    await cancel(app, args.cancel);
    return;
  }
  const submitted = await submitJob(app, await buildBody(app, args));
  if (!submitted.ok) {
    process.stderr.write(
      `The job was not submitted:\n${submitted.errors.map((e) => `  ${e.field}: ${e.message}`).join("\n")}\n`,
    );
    process.exitCode = 2;
    return;
  }
  process.stdout.write(`Submitted job ${submitted.id} with ${submitted.itemCount} items.\n`);
  if (submitted.wakeUp === "failed")
    process.stderr.write(
      `Warning: the coordinator could not be woken (${submitted.wakeUpError ?? "unknown error"}); the job starts at its next timer tick.\n`,
    );
  if (!args.wait) return;
  const bar = new SingleBar(
    {
      format: "{bar} {percentage}% | {value}/{total} items | {failed} failed | {status}",
      hideCursor: true,
      noTTYOutput: true,
      notTTYSchedule: 5000,
    },
    Presets.shades_classic,
  );
  bar.start(submitted.itemCount, 0, { failed: 0, status: "pending" });
  const deadline = Date.now() + args.timeoutS * 1000;
  for (;;) {
    const status = await getJobStatus(app, submitted.id);
    if (status !== undefined)
      bar.update(status.progress.done + status.progress.failed, {
        failed: status.progress.failed,
        status: status.status,
      });
    if (status !== undefined && hasEnded(status.status)) {
      bar.stop();
      process.stdout.write(
        `${JSON.stringify({ id: status.id, status: status.status, progress: status.progress, aggregate: status.aggregate, failures: status.failures }, null, 2)}\n`,
      );
      if (status.status !== "completed") {
        process.stderr.write(
          `Job ${status.id} ended as ${status.status}${status.failureReason === undefined ? "" : ` (${status.failureReason})`} before every item was processed.\n`,
        );
        process.exitCode = 3;
      }
      return;
    }
    if (status?.status === "failed") {
      bar.stop();
      throw new Error(
        `Job ${submitted.id} failed: ${status.failureReason ?? "no reason recorded"} (${status.progress.done} done, ${status.progress.failed} failed of ${status.progress.total}).`,
      );
    }
    if (Date.now() > deadline) {
      bar.stop();
      throw new Error(
        `Job ${submitted.id} did not complete within ${args.timeoutS} s; is a coordinator running (npm run local, or the deployed app)?`,
      );
    }
    await delay(1000);
  }
}

async function cancel(app: CoordinatorApp, id: string): Promise<void> {
  const result = await cancelJob(app, id);
  if (result.outcome === "requested") {
    process.stdout.write(`Cancellation of job ${id} requested; the leader ends it as cancelled at its next step.\n`);
    if (result.wakeUp === "failed")
      process.stderr.write(
        `Warning: the coordinator could not be woken (${result.wakeUpError ?? "unknown error"}); the cancellation is applied at its next timer tick.\n`,
      );
    return;
  }
  process.stderr.write(
    result.outcome === "not-found"
      ? `No job "${id}".\n`
      : result.outcome === "unreadable"
        ? `Job ${id} cannot be read by this version (${result.reason}); nothing was stored, ask again later.\n`
        : `Job ${id} has already ended (${result.status}); nothing to cancel.\n`,
  );
  process.exitCode = 1;
}

if (require.main === module) {
  main().catch((error: unknown) => {
    const usage = error instanceof UsageError ? `\n\n${USAGE}` : "";
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}${usage}\n`);
    process.exitCode = error instanceof UsageError ? 2 : 1;
  });
}
