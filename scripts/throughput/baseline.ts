import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { BlobServiceClient } from "@azure/storage-blob";
import { QueueServiceClient, type QueueClient } from "@azure/storage-queue";
import { groupByKind, groupByView, type GroupByPartial } from "../../src/coordination/groupBy";
import { DEFAULT_PIPELINE_OPTIONS } from "../../src/storage/clients";
import { decodeBody, encodeBody } from "../../src/storage/StorageQueue";
import { delay, withJitter } from "../../src/util/delay";
import { aggregatesMatch, asAggregate, createDemoJob } from "../local/demoData";
import { BASELINE_RESULT_BATCH, BASELINE_SEND_PARALLELISM, BASELINE_VISIBILITY_S, parseWorkerLine, pollDelaysMs, type BaselineWork } from "./baselineProtocol";

/**
 * The raw-SDK baseline: the same queue operations as the app for the same items, with nothing else. A producer (this
 * process) sends one base64 JSON work message per item, 16 at a time; `workers` worker processes
 * (./baselineWorker.ts) receive, process and report; a consumer (this process) receives results 32 at a time,
 * merges them with `groupByKind.merge` and deletes them. Timed from the first send to the last merge.
 */

const WORKER_ENTRY = resolve(__dirname, "baselineWorker.ts");
const TSX_LOADER = pathToFileURL(createRequire(__filename).resolve("tsx")).href;
const READY_TIMEOUT_MS = 60_000;

/** Baseline names: its own queues and input container on the same account, so the app's are untouched. */
export const BASELINE_NAMES = { workQueue: "bench-work", resultsQueue: "bench-results", inputContainer: "bench-inputs" } as const;

/** Every worker process alive, so an exit or Ctrl-C can kill them. */
const liveWorkers = new Set<ChildProcess>();

/** SIGKILLs every baseline worker still running (for exit paths). */
export function killBaselineWorkers(): void {
  for (const child of liveWorkers) child.kill("SIGKILL");
}

/** Options of {@link runBaseline}. */
export interface BaselineOptions {
  connectionString: string;
  items: number;
  workers: number;
  label: string;
  /** Give up after this long. */
  maxWaitS: number;
  abortSignal: AbortSignal;
}

/** What a baseline run measured. */
export interface BaselineResult {
  ok: boolean;
  problem: string | undefined;
  items: number;
  startMs: number;
  endMs: number;
  durationS: number;
  itemsPerS: number;
  matches: boolean;
  /** Result messages that repeated an item already merged (redeliveries). */
  duplicates: number;
  workers: { pid: number | undefined; processed: number | undefined; failed: number | undefined }[];
  /** The queues it used (named per run). */
  queues: { work: string; results: string };
}

/** Runs the baseline once. */
export async function runBaseline(options: BaselineOptions): Promise<BaselineResult> {
  const { connectionString, items } = options;
  const demo = createDemoJob(items, `bench-baseline/${options.label}`);
  const queues = QueueServiceClient.fromConnectionString(connectionString, DEFAULT_PIPELINE_OPTIONS);
  const suffix = options.label.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  const work = queues.getQueueClient(`${BASELINE_NAMES.workQueue}-${suffix}`);
  const results = queues.getQueueClient(`${BASELINE_NAMES.resultsQueue}-${suffix}`);
  const inputs = BlobServiceClient.fromConnectionString(connectionString, DEFAULT_PIPELINE_OPTIONS).getContainerClient(BASELINE_NAMES.inputContainer);
  // Setup, not timed: the queues, and the input blobs the items name (the runner uploads the app's the same way).
  await Promise.all([work.createIfNotExists(), results.createIfNotExists(), inputs.createIfNotExists()]);
  for (let start = 0; start < demo.blobs.length; start += 64) {
    await Promise.all(demo.blobs.slice(start, start + 64).map((blob) => inputs.getBlockBlobClient(blob.name).upload(blob.text, Buffer.byteLength(blob.text))));
  }
  const workers = await startWorkers(options.workers, { connectionString, workQueue: work.name, resultsQueue: results.name, inputContainer: inputs.containerName });
  const jobId = randomUUID();
  const bodies = demo.spec.items.map((input, item) => encodeBody(JSON.stringify({ v: 1, jobId, item, kind: demo.spec.kind, params: demo.spec.params, input } satisfies BaselineWork), "base64"));
  let problem: string | undefined;
  let aggregate: GroupByPartial = groupByKind.empty();
  let duplicates = 0;
  const startMs = Date.now();
  let endMs = startMs;
  try {
    const deadline = AbortSignal.any([options.abortSignal, AbortSignal.timeout(options.maxWaitS * 1000)]);
    // Every request in flight listens on it (16 sends and a consumer at once): not a leak.
    setMaxListeners(0, deadline);
    const [, consumed] = await Promise.all([produce(work, bodies, deadline), consume(results, items, deadline)]);
    endMs = Date.now();
    aggregate = consumed.aggregate;
    duplicates = consumed.duplicates;
  } catch (error) {
    endMs = Date.now();
    problem = options.abortSignal.aborted ? "Interrupted." : `The baseline did not finish: ${error instanceof Error ? error.message : String(error)}`;
  }
  const stopped = await stopWorkers(workers);
  await Promise.all([work.deleteIfExists(), results.deleteIfExists()]).catch(() => undefined);
  const matches = aggregatesMatch(asAggregate(groupByView(aggregate)), demo.expected);
  if (problem === undefined && !matches) problem = "The baseline's aggregate differs from the expected one.";
  const durationS = (endMs - startMs) / 1000;
  return { ok: problem === undefined, problem, items, startMs, endMs, durationS, itemsPerS: items / Math.max(durationS, 1e-3), matches, duplicates, workers: stopped, queues: { work: work.name, results: results.name } };
}

/** Sends every work message, `BASELINE_SEND_PARALLELISM` at a time (as the leader's dispatch does). */
async function produce(work: QueueClient, bodies: readonly string[], abortSignal: AbortSignal): Promise<void> {
  for (let start = 0; start < bodies.length; start += BASELINE_SEND_PARALLELISM) {
    await Promise.all(bodies.slice(start, start + BASELINE_SEND_PARALLELISM).map((body) => work.sendMessage(body, { abortSignal })));
  }
}

/** Receives results 32 at a time, merges each item once, deletes them; returns when every item is merged. */
async function consume(results: QueueClient, items: number, abortSignal: AbortSignal): Promise<{ aggregate: GroupByPartial; duplicates: number }> {
  const seen = new Set<number>();
  let aggregate = groupByKind.empty();
  let duplicates = 0;
  const delays = pollDelaysMs();
  while (seen.size < items) {
    const received = (await results.receiveMessages({ numberOfMessages: BASELINE_RESULT_BATCH, visibilityTimeout: BASELINE_VISIBILITY_S, abortSignal })).receivedMessageItems;
    if (received.length === 0) {
      await delay(withJitter(delays.next(), 0.2), { abortSignal });
      continue;
    }
    delays.reset();
    for (const message of received) {
      const text = decodeBody(message.messageText, "base64");
      if (text === undefined) throw new Error(`result message ${message.messageId} is not base64`);
      const result = JSON.parse(text) as { item: number; partial: GroupByPartial };
      if (seen.has(result.item)) duplicates++;
      else {
        seen.add(result.item);
        aggregate = groupByKind.merge(aggregate, result.partial);
      }
    }
    await Promise.all(received.map((message) => results.deleteMessage(message.messageId, message.popReceipt, { abortSignal })));
  }
  return { aggregate, duplicates };
}

interface WorkerProcess {
  child: ChildProcess;
  stopped: Promise<{ processed: number | undefined; failed: number | undefined }>;
}

async function startWorkers(count: number, names: { connectionString: string; workQueue: string; resultsQueue: string; inputContainer: string }): Promise<WorkerProcess[]> {
  const workers = Array.from({ length: count }, (): WorkerProcess & { ready: Promise<void> } => {
    const child = spawn(process.execPath, ["--import", TSX_LOADER, WORKER_ENTRY], {
      env: { ...process.env, BASELINE_STORAGE: names.connectionString, BASELINE_WORK_QUEUE: names.workQueue, BASELINE_RESULTS_QUEUE: names.resultsQueue, BASELINE_INPUT_CONTAINER: names.inputContainer },
      stdio: ["pipe", "pipe", "inherit"],
    });
    liveWorkers.add(child);
    let onReady: () => void = () => undefined;
    const ready = new Promise<void>((done) => (onReady = done));
    let report: { processed: number | undefined; failed: number | undefined } = { processed: undefined, failed: undefined };
    createInterface({ input: child.stdout }).on("line", (text) => {
      const line = parseWorkerLine(text);
      if (line?.kind === "ready") onReady();
      if (line?.kind === "stopped") report = { processed: line.processed, failed: line.failed };
    });
    const stopped = new Promise<{ processed: number | undefined; failed: number | undefined }>((done) => {
      child.once("exit", () => {
        liveWorkers.delete(child);
        done(report);
      });
    });
    child.stdin.on("error", () => undefined);
    return { child, stopped, ready };
  });
  const waiting = new AbortController();
  const timeout = delay(READY_TIMEOUT_MS, { abortSignal: waiting.signal }).then(() => {
    throw new Error(`The baseline workers did not start within ${READY_TIMEOUT_MS / 1000} s.`);
  });
  const exited = Promise.race(workers.map((worker) => worker.stopped)).then(() => {
    throw new Error("A baseline worker exited while starting; see its output above.");
  });
  // Whichever loses the race settles later; nobody awaits it then.
  timeout.catch(() => undefined);
  exited.catch(() => undefined);
  try {
    await Promise.race([Promise.all(workers.map((worker) => worker.ready)), timeout, exited]);
  } catch (error) {
    for (const worker of workers) worker.child.kill("SIGKILL");
    throw error;
  } finally {
    waiting.abort();
  }
  return workers;
}

async function stopWorkers(workers: readonly WorkerProcess[]): Promise<BaselineResult["workers"]> {
  return Promise.all(
    workers.map(async ({ child, stopped }) => {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const report = await stopped;
      clearTimeout(timer);
      return { pid: child.pid, ...report };
    }),
  );
}
