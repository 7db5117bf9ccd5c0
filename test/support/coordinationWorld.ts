import type { AppEvent } from "../../src/app/events";
import { createRegistry } from "../../scripts/support/repoKinds";
import { readSettings } from "../../src/app/settings";
import type { CoordinationDeps } from "../../src/coordination/deps";
import { RESULT_VISIBILITY_S } from "../../src/coordination/fold/foldResultBatch";
import { INFERRED_FAILURE_HOLD_MS } from "../../src/coordination/state/heldItems";
import { jobStateSchema, keys } from "../../src/coordination/state/jobState";
import { JobStopChecks } from "../../src/coordination/state/jobStops";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { silentLogger } from "../../src/library/util/logger";
import { MemoryStateStore } from "./MemoryStateStore";
import { MemoryFiles, MemoryQueue } from "./memoryPorts";

/**
 * The coordination deps on in-memory ports, with the fakes and the events they record, for unit tests. Their wall
 * clock (`now`) reads `clock.ms`, which only a test moves (held items wait out their hold on it:
 * {@link HOLD_PASSED_MS}).
 */
export function world(overrides: Partial<CoordinationDeps> = {}) {
  const clock = { ms: 1000 };
  const events: AppEvent[] = [];
  const state = new MemoryStateStore();
  const work = new MemoryQueue("work");
  const results = new MemoryQueue("results");
  const poison = new MemoryQueue("work-poison");
  const resultsPoison = new MemoryQueue("results-poison");
  const system = new MemoryFiles();
  const inputs = new MemoryFiles();
  const deps: CoordinationDeps = {
    state,
    system,
    inputs,
    workQueue: work,
    resultsQueue: results,
    workPoisonQueue: poison,
    resultsPoisonQueue: resultsPoison,
    registry: createRegistry(),
    dispatchBatchSize: 10,
    maxInFlight: 20,
    maxAggregateGroups: 200_000,
    maxJobDocumentBytes: readSettings({}).MAX_JOB_DOCUMENT_BYTES,
    jobRetentionMs: readSettings({}).JOB_RETENTION_HOURS * 3_600_000,
    maxInputBlobBytes: readSettings({}).MAX_INPUT_BLOB_BYTES,
    workUnitConcurrency: 1,
    maxItemHoldMs: 0,
    jobStops: new JobStopChecks(system),
    // One item per work message unless a test asks for units (the per-item behaviour most tests check); a test that
    // asks gets units of that many items (no spread over several units, no smaller units for blobs) unless it asks.
    workUnitMaxItems: 1,
    workUnitMaxBytes: 45 * 1024,
    workUnitMaxBlobItems: 1000,
    workUnitSpread: 1,
    logger: silentLogger,
    emit: (event) => events.push(event),
    instanceId: "unit",
    now: () => clock.ms,
    ...overrides,
  };
  return { deps, events, work, results, poison, resultsPoison, state, system, inputs, clock };
}

/**
 * How far a test moves `clock.ms` for held items to fail at the next step: their hold, and the results' visibility a
 * draining fold must begin after (`fold/settleHeld.ts`).
 */
export const HOLD_PASSED_MS = INFERRED_FAILURE_HOLD_MS + RESULT_VISIBILITY_S * 1000;

/**
 * Stop checks of a worker that does not know a job was stopped: an older version's (before stop checks), or one whose
 * last check predates the request. Its late results are what the leader must discard.
 */
export const unawareOfStops: CoordinationDeps["jobStops"] = { isStopped: () => Promise.resolve(false) };

/** One pass and no more, with budget to spare (workers run between steps in these tests). */
export const ONE_PASS = { budgetMs: 60_000, maxPasses: 1 };
export const params = { format: "ndjson", keyField: "k", valueField: "v" } as const;
export const item = (k: string, v: number): { inline: string } => ({ inline: JSON.stringify({ k, v }) });

/**
 * Runs queued work messages (up to `max`) through the worker (the queue trigger's job); `workerDeps` may differ
 * (another deployment).
 */
export async function work(
  deps: CoordinationDeps,
  queue: MemoryQueue,
  workerDeps: CoordinationDeps = deps,
  max = 1000,
): Promise<number> {
  const messages = await queue.receive(max, 60);
  for (const message of messages) {
    await processWorkMessage(workerDeps, JSON.parse(message.text ?? "null") as unknown, {
      id: message.id,
      dequeueCount: message.dequeueCount,
      maxDequeueCount: 5,
    });
    await queue.delete(message);
  }
  return messages.length;
}

/** A job's stored state with the epoch that wrote it. */
export async function readJob(state: MemoryStateStore, id: string) {
  const stored = await state.read(keys.jobState(id));
  return stored === undefined ? undefined : { ...jobStateSchema.parse(stored.value), epoch: stored.epoch };
}
