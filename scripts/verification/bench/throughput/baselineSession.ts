import { setMaxListeners } from "node:events";
import { createStorageClients, DEFAULT_PIPELINE_OPTIONS } from "../../../../src/azure/clients";
import { groupByView } from "../../../../src/groupBy/groupBy";
import { delay } from "../../../../src/library/util/delay";
import { aggregatesMatch, asAggregate } from "../../../../dev/src/local/demoData";
import { BASELINE_NAMES, consume, produce, startWorkers, stopWorkers, workBodies, workersCpuTimes } from "./baseline";
import type { ScenarioJob } from "./scenarios";

/**
 * The batched loop (./baseline.ts) kept running across jobs: worker processes started once, then given one job after
 * another — the same unit messages as the app's leader — so their later jobs find them warm, as `bench:instance`'s
 * instance is after its first job. Each job's CPU is the workers' own (the producer and consumer run in this process).
 */

/** A started loop. */
export interface LoopSession {
  /** Sends the job's units, waits for every result; the workers' CPU over it (ms) and its time from the first send. */
  runJob(
    job: ScenarioJob,
    limits: { maxItems: number; maxBytes: number },
    options: { settleMs: number; abortSignal: AbortSignal },
  ): Promise<{ cpuMs: number; ms: number }>;
  stop(): Promise<void>;
}

/** Starts `workers` loop workers on queues named from `label`. */
export async function startLoopSession(options: {
  connectionString: string;
  inputContainer: string;
  label: string;
  countsPrefix: string;
  workers: number;
}): Promise<LoopSession> {
  const clients = createStorageClients(
    { kind: "connectionString", connectionString: options.connectionString },
    DEFAULT_PIPELINE_OPTIONS,
  );
  const suffix = `session-${options.label}`.toLowerCase().replace(/[^a-z0-9]+/g, "-");
  const work = clients.queue.getQueueClient(`${BASELINE_NAMES.workQueue}-${suffix}`);
  const results = clients.queue.getQueueClient(`${BASELINE_NAMES.resultsQueue}-${suffix}`);
  await Promise.all([work.createIfNotExists(), results.createIfNotExists()]);
  const workers = await startWorkers(
    Array.from(
      { length: options.workers },
      (_, index) => `${options.countsPrefix}-${suffix}-worker-${index + 1}.jsonl`,
    ),
    {
      connectionString: options.connectionString,
      workQueue: work.name,
      resultsQueue: results.name,
      inputContainer: options.inputContainer,
    },
  );
  const cpuMs = (): number => {
    const times = workersCpuTimes(workers);
    if (times === undefined) throw new Error("The loop workers' CPU time cannot be read (are they still running?).");
    return times.reduce((sum, time) => sum + time.cpuS * 1000, 0);
  };
  return {
    async runJob(job, limits, { settleMs, abortSignal }) {
      const bodies = workBodies(job, "batched", limits);
      const deadline = AbortSignal.any([abortSignal, AbortSignal.timeout(600_000)]);
      setMaxListeners(0, deadline);
      const before = cpuMs();
      const startedMs = performance.now();
      const [, consumed] = await Promise.all([
        produce(work, bodies, deadline, () => undefined),
        consume(results, job.items.length, deadline),
      ]);
      const ms = performance.now() - startedMs;
      if (!aggregatesMatch(asAggregate(groupByView(consumed.aggregate)), job.expected))
        throw new Error("The loop's aggregate differs from the expected one.");
      // The workers' last deletes, as the app's instance's are counted.
      await delay(settleMs, { abortSignal });
      return { cpuMs: Math.round(cpuMs() - before), ms };
    },
    async stop() {
      await stopWorkers(workers);
      await Promise.all([work.deleteIfExists(), results.deleteIfExists()]).catch(() => undefined);
    },
  };
}
