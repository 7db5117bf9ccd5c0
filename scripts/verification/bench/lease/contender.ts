/**
 * One contender of the lease benchmark, run as its own OS process by scripts/verification/bench/lease.ts:
 *
 *   node --import tsx scripts/verification/bench/lease/contender.ts --impl project|takeover|baseline
 *     --connection-string CS --container NAME --id ID
 *
 * Prints the protocol of ./protocol.ts on stdout (library and baseline diagnostics go to stderr) and reads commands
 * on stdin. Exits when told to release, and at once when stdin closes (the benchmark is gone).
 */
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { BlobServiceClient } from "@azure/storage-blob";
import { BlobLeaseStore, LeaderElector, type LeadershipEvent, type Logger } from "../../../../src/library/index";
import { createStorageClients } from "../../../../src/azure/clients";
import { BASELINE_PIPELINE_OPTIONS, BaselineMutex } from "./baselineMutex";
import {
  IMPLEMENTATIONS,
  LEASE_BLOB_NAME,
  RELEASE_COMMAND,
  type ContenderMessage,
  type Implementation,
} from "./protocol";

interface ContenderArgs {
  impl: Implementation;
  connectionString: string;
  container: string;
  id: string;
}

function readArgs(argv: string[]): ContenderArgs {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      impl: { type: "string" },
      "connection-string": { type: "string" },
      container: { type: "string" },
      id: { type: "string" },
    },
  });
  const impl = IMPLEMENTATIONS.find((name) => name === values.impl);
  const { "connection-string": connectionString, container, id } = values;
  if (impl === undefined)
    throw new Error(`--impl must be one of ${IMPLEMENTATIONS.join(", ")}; got ${JSON.stringify(values.impl)}.`);
  if (!connectionString) throw new Error("--connection-string is required.");
  if (!container || !/^[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])$/.test(container))
    throw new Error(`--container must be a valid container name; got ${JSON.stringify(container)}.`);
  if (!id || !/^[\w.:@-]{1,128}$/.test(id))
    throw new Error(`--id must be 1–128 letters, digits or . _ : @ -; got ${JSON.stringify(id)}.`);
  return { impl, connectionString, container, id };
}

function emit(message: ContenderMessage): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function trace(id: string, message: string): void {
  process.stderr.write(`[${new Date().toISOString()} ${id}] ${message}\n`);
}

/** Resolves when `signal` fires: the leader's "task" just holds leadership until told to stop. */
function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else
      signal.addEventListener(
        "abort",
        () => {
          resolve();
        },
        { once: true },
      );
  });
}

/**
 * The project: `LeaderElector` with its default timings — and with `takeover` on for the `takeover` implementation (its
 * defaults are the app's) — leading in a loop until shutdown.
 * @returns when the lease release completed (wall-clock ms, from the library's own event), or undefined if not leading.
 */
async function runProject(args: ContenderArgs, shutdown: AbortSignal): Promise<number | undefined> {
  const { blob } = createStorageClients({ kind: "connectionString", connectionString: args.connectionString });
  const store = new BlobLeaseStore(blob, { containerName: args.container, blobName: LEASE_BLOB_NAME });
  let releasedAtMs: number | undefined;
  const onEvent = (event: LeadershipEvent): void => {
    if (event.type === "lease-released") releasedAtMs = event.atMs;
    if (event.type === "lease-lost" && event.reason !== "shutdown")
      emit({ type: "lost", id: args.id, t: event.atMs, detail: `${event.reason}: ${event.detail}` });
  };
  const log = (message: string): void => {
    trace(args.id, message);
  };
  const logger: Logger = { verbose: () => undefined, info: log, warn: log, error: log };
  const elector = new LeaderElector({
    store,
    instanceId: args.id,
    onEvent,
    logger,
    takeover: args.impl === "takeover",
  });
  emit({ type: "ready", id: args.id, t: Date.now() });
  while (!shutdown.aborted) {
    try {
      await elector.lead(
        async (term) => {
          emit({ type: "acquired", id: args.id, t: Date.now() });
          await untilAborted(term.signal);
        },
        { abortSignal: shutdown },
      );
    } catch (error) {
      if (isAborted(shutdown)) break;
      throw error;
    }
  }
  return releasedAtMs;
}

/**
 * The baseline (./baselineMutex.ts), contending until shutdown.
 * @returns when the run ended after a release (wall-clock ms), or undefined if not leading.
 */
async function runBaseline(args: ContenderArgs, shutdown: AbortSignal): Promise<number | undefined> {
  const service = BlobServiceClient.fromConnectionString(args.connectionString, BASELINE_PIPELINE_OPTIONS);
  const mutex = new BaselineMutex(service.getContainerClient(args.container), LEASE_BLOB_NAME, (message) => {
    trace(args.id, message);
  });
  await mutex.createBlob();
  emit({ type: "ready", id: args.id, t: Date.now() });
  const state = { leading: false };
  await mutex.runTaskWhenMutexAcquired(async (signal) => {
    state.leading = true;
    emit({ type: "acquired", id: args.id, t: Date.now() });
    await untilAborted(signal);
    if (!shutdown.aborted) {
      state.leading = false;
      emit({ type: "lost", id: args.id, t: Date.now(), detail: "renewal refused or failed" });
    }
  }, shutdown);
  // runTaskWhenMutexAcquired returns only after KeepRenewingLease's release call has completed.
  return state.leading ? Date.now() : undefined;
}

/** Reads `signal.aborted` afresh (after an await, where type narrowing would assume it unchanged). */
function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

async function main(): Promise<void> {
  const args = readArgs(process.argv.slice(2));
  const shutdown = new AbortController();
  const commands = createInterface({ input: process.stdin });
  commands.on("line", (line) => {
    if (line.trim() === RELEASE_COMMAND) shutdown.abort();
    else trace(args.id, `unknown command ${JSON.stringify(line)}`);
  });
  commands.on("close", () => process.exit(0));
  const run = args.impl === "baseline" ? runBaseline : runProject;
  const releasedAtMs = await run(args, shutdown.signal);
  emit(
    releasedAtMs === undefined
      ? { type: "stopped", id: args.id, t: Date.now() }
      : { type: "released", id: args.id, t: releasedAtMs },
  );
  process.exit(0);
}

main().catch((error: unknown) => {
  const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
  emit({
    type: "error",
    id: process.argv.find((arg, index, all) => all[index - 1] === "--id") ?? "unknown",
    t: Date.now(),
    message,
  });
  process.exit(1);
});
