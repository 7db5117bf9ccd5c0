import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { setMaxListeners } from "node:events";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import type { QueueClient } from "@azure/storage-queue";
import { groupByView, mergeGroups, type GroupByPartial } from "../../../../src/groupBy/groupBy";
import { createStorageClients, DEFAULT_PIPELINE_OPTIONS } from "../../../../src/azure/clients";
import { decodeBody, encodeBody } from "../../../../src/azure/StorageQueue";
import { delay, withJitter } from "../../../../src/library/util/delay";
import { aggregatesMatch, asAggregate } from "../../../../dev/src/local/demoData";
import {
  BASELINE_RESULT_BATCH,
  BASELINE_SEND_PARALLELISM,
  BASELINE_VISIBILITY_S,
  parseWorkerLine,
  pollDelaysMs,
  type BaselineResult,
  type BaselineWork,
} from "./baselineProtocol";
import { readCpuTimes, type CpuTimes } from "./cpuTimes";
import { BUCKET_MS, RequestCounter, queueEndpointOf, readCountFiles, type RequestCount } from "./requestCounter";
import type { ScenarioJob } from "./scenarios";
import { packUnits } from "./units";

/**
 * The raw-SDK baselines: the same work as the app with nothing else. A producer (this process) sends the work
 * messages, 64 at a time; `workers` worker processes (./baselineWorker.ts) receive, process and report one result
 * per message; a consumer (this process) receives results 32 at a time, merges them with `mergeGroups` and
 * deletes them. Timed from the producer's start (its first sends) to the last merge; with `idleBeforeSendMs` the
 * workers poll the empty queue that long first, not timed. Two loops:
 * - `per-item`: one message per item (the app before work units);
 * - `batched`: the same unit messages as the app's leader sends (./units.ts: at most `unitMaxItems` items and
 *   `unitMaxBytes` bytes of JSON each), one result per unit.
 * Every storage request is counted (./requestCounter.ts): this process's in memory, the workers' in files.
 */

const WORKER_ENTRY = resolve(__dirname, "baselineWorker.ts");
const TSX_LOADER = pathToFileURL(createRequire(__filename).resolve("tsx")).href;
const READY_TIMEOUT_MS = 60_000;

/** Baseline names: its own queues on the same account, so the app's are untouched. */
export const BASELINE_NAMES = { workQueue: "bench-work", resultsQueue: "bench-results" } as const;

export type BaselineMode = "per-item" | "batched";

/** Every worker process alive, so an exit or Ctrl-C can kill them. */
const liveWorkers = new Set<ChildProcess>();

/** SIGKILLs every baseline worker still running (for exit paths). */
export function killBaselineWorkers(): void {
  for (const child of liveWorkers) child.kill("SIGKILL");
}

/** Options of {@link runBaseline}. */
export interface BaselineOptions {
  mode: BaselineMode;
  connectionString: string;
  job: ScenarioJob;
  /** The container the job's blobs are in (uploaded beforehand). */
  inputContainer: string;
  /** Unit limits of the batched loop (the app's WORK_UNIT_MAX_ITEMS / WORK_UNIT_MAX_BYTES). */
  unitMaxItems: number;
  unitMaxBytes: number;
  workers: number;
  label: string;
  /** Where the workers' request counts go (one file per worker, named from this prefix). */
  countsPrefix: string;
  /**
   * How long the workers poll an empty queue before the producer sends (default 0: it sends once they are ready). At
   * IDLE_LOOP_MS (./baselineProtocol.ts) their idle back-off has reached its longest wait, as a deployed app's idle
   * workers' has.
   */
  idleBeforeSendMs?: number;
  /** Give up after this long. */
  maxWaitS: number;
  abortSignal: AbortSignal;
}

/** What a baseline run measured. */
export interface BaselineRunResult {
  ok: boolean;
  problem: string | undefined;
  mode: BaselineMode;
  items: number;
  /** Work messages sent (one per item, or one per unit). */
  messages: number;
  startMs: number;
  /** When the first work message was sent. */
  firstSendMs: number | undefined;
  endMs: number;
  durationS: number;
  itemsPerS: number;
  matches: boolean;
  /** Result messages that repeated items already merged (redeliveries). */
  duplicates: number;
  /** Messages the workers processed (executions, had they been functions) and failed. */
  workers: { pid: number | undefined; processed: number | undefined; failed: number | undefined }[];
  /** Every storage request of the run: the producer's and consumer's, and the workers'. */
  counts: RequestCount[];
  queues: { work: string; results: string };
  /**
   * CPU time of the worker processes from the producer's start to the last merge, s, and their main threads' wait in
   * the run queue meanwhile (./projectRun.ts readCpuTimes); undefined where /proc cannot be read.
   */
  workersCpuS: number | undefined;
  workersRunQueueWaitS: number | undefined;
  /** CPU time of this process meanwhile, s: the producer's sends and the consumer's merges. */
  producerConsumerCpuS: number;
}

/** Runs one baseline loop once. */
export async function runBaseline(options: BaselineOptions): Promise<BaselineRunResult> {
  const { connectionString, job, mode } = options;
  const counter = new RequestCounter("baseline", queueEndpointOf(connectionString));
  const clients = createStorageClients(
    { kind: "connectionString", connectionString },
    { ...DEFAULT_PIPELINE_OPTIONS, policies: [counter.policy] },
  );
  const suffix = `${mode}-${options.label}`.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  const work = clients.queue.getQueueClient(`${BASELINE_NAMES.workQueue}-${suffix}`);
  const results = clients.queue.getQueueClient(`${BASELINE_NAMES.resultsQueue}-${suffix}`);
  // Setup, not counted: the queues.
  await Promise.all([work.createIfNotExists(), results.createIfNotExists()]);
  const countsFiles = Array.from(
    { length: options.workers },
    (_, index) => `${options.countsPrefix}-${suffix}-worker-${index + 1}.jsonl`,
  );
  const workers = await startWorkers(countsFiles, {
    connectionString,
    workQueue: work.name,
    resultsQueue: results.name,
    inputContainer: options.inputContainer,
  });
  let problem: string | undefined;
  if ((options.idleBeforeSendMs ?? 0) > 0)
    try {
      await delay(options.idleBeforeSendMs ?? 0, { abortSignal: options.abortSignal });
    } catch {
      problem = "Interrupted.";
    }
  counter.take();
  const bodies = workBodies(job, mode, { maxItems: options.unitMaxItems, maxBytes: options.unitMaxBytes });
  let aggregate: GroupByPartial = [];
  let duplicates = 0;
  let firstSendMs: number | undefined;
  const cpuAtStart = workersCpuTimes(workers);
  const ownCpuAtStart = process.cpuUsage();
  const startMs = Date.now();
  let endMs = startMs;
  if (problem === undefined)
    try {
      const deadline = AbortSignal.any([options.abortSignal, AbortSignal.timeout(options.maxWaitS * 1000)]);
      // Every request in flight listens on it (64 sends and a consumer at once): not a leak.
      setMaxListeners(0, deadline);
      const [, consumed] = await Promise.all([
        produce(work, bodies, deadline, () => (firstSendMs ??= Date.now())),
        consume(results, job.items.length, deadline),
      ]);
      endMs = Date.now();
      aggregate = consumed.aggregate;
      duplicates = consumed.duplicates;
    } catch (error) {
      endMs = Date.now();
      problem = options.abortSignal.aborted
        ? "Interrupted."
        : `The baseline did not finish: ${error instanceof Error ? error.message : String(error)}`;
    }
  const cpuAtEnd = workersCpuTimes(workers);
  const ownCpu = process.cpuUsage(ownCpuAtStart);
  const cpuDelta = (pick: (times: CpuTimes) => number): number | undefined =>
    cpuAtStart === undefined || cpuAtEnd === undefined
      ? undefined
      : Math.round(
          cpuAtEnd.reduce((sum, times, index) => sum + pick(times) - pick(cpuAtStart[index] ?? times), 0) * 100,
        ) / 100;
  const stopped = await stopWorkers(workers);
  // From the producer's start, as the app's count from the submission's (the workers' idle polls before it are not
  // the job's), in the counter's buckets (the one holding the start counts whole, as the app's does).
  const counts = [...counter.take(), ...readCountFiles(countsFiles)].filter(
    (count) => count.atMs >= startMs - (startMs % BUCKET_MS),
  );
  await Promise.all([work.deleteIfExists(), results.deleteIfExists()]).catch(() => undefined);
  const matches = aggregatesMatch(asAggregate(groupByView(aggregate)), job.expected);
  if (problem === undefined && !matches) problem = "The baseline's aggregate differs from the expected one.";
  const durationS = (endMs - startMs) / 1000;
  const items = job.items.length;
  return {
    ok: problem === undefined,
    problem,
    mode,
    items,
    messages: bodies.length,
    startMs,
    firstSendMs,
    endMs,
    durationS,
    itemsPerS: items / Math.max(durationS, 1e-3),
    matches,
    duplicates,
    workers: stopped,
    workersCpuS: cpuDelta((times) => times.cpuS),
    workersRunQueueWaitS: cpuDelta((times) => times.runQueueWaitS),
    producerConsumerCpuS: Math.round((ownCpu.user + ownCpu.system) / 1e4) / 100,
    counts,
    queues: { work: work.name, results: results.name },
  };
}

/** A job's work messages under a fresh job id: one per item, or the app's units (./units.ts) at these limits. */
export function workBodies(
  job: ScenarioJob,
  mode: BaselineMode,
  limits: { maxItems: number; maxBytes: number },
): string[] {
  const base = { jobId: randomUUID(), kind: job.kind, params: job.params };
  return mode === "per-item"
    ? job.items.map((input, item) => JSON.stringify({ v: 1, ...base, item, input } satisfies BaselineWork))
    : packUnits(
        job.items,
        limits,
        Buffer.byteLength(JSON.stringify({ v: 2, ...base, first: job.items.length, inputs: [] })),
      ).map((unit) => JSON.stringify({ v: 2, ...base, first: unit.first, inputs: unit.inputs } satisfies BaselineWork));
}

/** Sends every work message (base64, as the host reads them), `BASELINE_SEND_PARALLELISM` at a time. */
export async function produce(
  work: QueueClient,
  bodies: readonly string[],
  abortSignal: AbortSignal,
  onSent: () => void,
): Promise<void> {
  for (let start = 0; start < bodies.length; start += BASELINE_SEND_PARALLELISM) {
    await Promise.all(
      bodies
        .slice(start, start + BASELINE_SEND_PARALLELISM)
        .map((body) => work.sendMessage(encodeBody(body, "base64"), { abortSignal })),
    );
    onSent();
  }
}

/** Receives results 32 at a time, merges each item once, deletes them; returns when every item is merged. */
export async function consume(
  results: QueueClient,
  items: number,
  abortSignal: AbortSignal,
): Promise<{ aggregate: GroupByPartial; duplicates: number }> {
  const seen = new Uint8Array(items);
  let merged = 0;
  let aggregate: GroupByPartial = [];
  let duplicates = 0;
  const delays = pollDelaysMs();
  while (merged < items) {
    const received = (
      await results.receiveMessages({
        numberOfMessages: BASELINE_RESULT_BATCH,
        visibilityTimeout: BASELINE_VISIBILITY_S,
        abortSignal,
      })
    ).receivedMessageItems;
    if (received.length === 0) {
      await delay(withJitter(delays.next(), 0.2), { abortSignal });
      continue;
    }
    delays.reset();
    for (const message of received) {
      const text = decodeBody(message.messageText, "base64");
      if (text === undefined) throw new Error(`result message ${message.messageId} is not base64`);
      const result = JSON.parse(text) as BaselineResult;
      // Units keep their boundaries: a result's items are all new or all seen.
      if (seen[result.first] === 1) duplicates++;
      else {
        seen.fill(1, result.first, result.first + result.count);
        merged += result.count;
        aggregate = mergeGroups(aggregate, result.partial as GroupByPartial);
      }
    }
    await Promise.all(
      received.map((message) => results.deleteMessage(message.messageId, message.popReceipt, { abortSignal })),
    );
  }
  return { aggregate, duplicates };
}

/** Every worker's CPU times (./projectRun.ts readCpuTimes), or undefined if any cannot be read. */
export function workersCpuTimes(workers: readonly WorkerProcess[]): CpuTimes[] | undefined {
  const times: CpuTimes[] = [];
  for (const worker of workers) {
    const read = worker.child.pid === undefined ? undefined : readCpuTimes(worker.child.pid);
    if (read === undefined) return undefined;
    times.push(read);
  }
  return times;
}

export interface WorkerProcess {
  child: ChildProcess;
  stopped: Promise<{ processed: number | undefined; failed: number | undefined }>;
}

export async function startWorkers(
  countsFiles: readonly string[],
  names: { connectionString: string; workQueue: string; resultsQueue: string; inputContainer: string },
): Promise<WorkerProcess[]> {
  const workers = countsFiles.map((countsFile): WorkerProcess & { ready: Promise<void> } => {
    const child = spawn(process.execPath, ["--import", TSX_LOADER, WORKER_ENTRY], {
      env: {
        ...process.env,
        BASELINE_STORAGE: names.connectionString,
        BASELINE_WORK_QUEUE: names.workQueue,
        BASELINE_RESULTS_QUEUE: names.resultsQueue,
        BASELINE_INPUT_CONTAINER: names.inputContainer,
        BASELINE_REQUEST_COUNTS_FILE: countsFile,
      },
      stdio: ["pipe", "pipe", "inherit"],
    });
    liveWorkers.add(child);
    let onReady: () => void = () => undefined;
    const ready = new Promise<void>((done) => (onReady = done));
    let report: { processed: number | undefined; failed: number | undefined } = {
      processed: undefined,
      failed: undefined,
    };
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

export async function stopWorkers(workers: readonly WorkerProcess[]): Promise<BaselineRunResult["workers"]> {
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
