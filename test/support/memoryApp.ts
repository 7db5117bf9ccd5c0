import { assembleCoordinatorApp, type CoordinatorApp, type Sink } from "../../src/app/context";
import { createRegistry } from "../../scripts/support/repoKinds";
import type { AppEvent } from "../../src/app/events";
import { readSettings } from "../../src/app/settings";
import { silentLogger } from "../../src/library/util/logger";
import { FakeLeaseStore } from "./FakeLeaseStore";
import { MemoryStateStore } from "./MemoryStateStore";
import { MemoryFiles, MemoryQueue } from "./memoryPorts";

/**
 * The app's own wiring (elector, sink) over in-memory ports and a fake lease, for unit tests of the operations. The
 * leader watcher is off unless a test sets LEADER_WATCH_INTERVAL_MS: it would read the lease in the background, on
 * real timers, for 45 s after each worker or wake-up invocation. So is the leader's sentinel, unless a test sets
 * LEADER_SENTINEL_SECONDS: it would put a message on the wake queue whenever a step has an active job.
 */
export function memoryApp(
  options: {
    store?: FakeLeaseStore;
    instanceId?: string;
    wakeQueue?: MemoryQueue;
    settings?: Record<string, string>;
  } = {},
) {
  const store = options.store ?? new FakeLeaseStore();
  const queues = {
    workQueue: new MemoryQueue("work"),
    resultsQueue: new MemoryQueue("results"),
    workPoisonQueue: new MemoryQueue("work-poison"),
    resultsPoisonQueue: new MemoryQueue("results-poison"),
    wakeQueue: options.wakeQueue ?? new MemoryQueue("wake"),
  };
  const system = new MemoryFiles();
  const inputs = new MemoryFiles();
  const app: CoordinatorApp = assembleCoordinatorApp({
    settings: readSettings({
      STEP_BUDGET_MS: "1000",
      LEADER_WATCH_INTERVAL_MS: "0",
      LEADER_SENTINEL_SECONDS: "0",
      ...options.settings,
    }),
    instanceId: options.instanceId ?? "unit-wake",
    leaseStore: store,
    state: new MemoryStateStore(),
    system,
    inputs,
    registry: createRegistry(),
    ...queues,
  });
  const events: AppEvent[] = [];
  const sink: Sink = { logger: silentLogger, emit: (event) => events.push(event) };
  return { app, sink, events, store, system, inputs, ...queues };
}
