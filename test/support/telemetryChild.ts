/**
 * Run by test/integration/telemetryExport.test.ts in a child process: sets up the app's telemetry from its environment
 * exactly as the Function App does (`getTelemetry()`), then sends what one coordinator tick and one worker unit would:
 * a few events and log lines through an instrumented sink, a unit's outcome, a queue sample; then shuts telemetry down
 * (the app-terminate hook's flush). Prints nothing.
 */
import type { Sink } from "../../src/app/context";
import { getTelemetry } from "../../src/app/telemetry/setupTelemetry";
import { MemoryStateStore } from "./MemoryStateStore";
import { MemoryQueue } from "./memoryPorts";

export const CHILD_TRACE_ID = "0af7651916cd43dd8448eb211c80319c";

async function main(): Promise<void> {
  const telemetry = getTelemetry();
  const quiet: Sink = {
    logger: { verbose: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
    emit: () => undefined,
  };
  const sink = telemetry.instrument(quiet, {
    functionName: "coordinator",
    invocationId: "inv-1",
    traceParent: `00-${CHILD_TRACE_ID}-b7ad6b7169203331-01`,
  });
  const instanceId = "func-x-abc-1";
  sink.emit({
    type: "lease-acquired",
    instanceId,
    atMs: 1_700_000_000_000,
    epoch: 7,
    previousHolder: "other-2",
    transitions: 7,
  });
  sink.emit({ type: "step-started", instanceId, atMs: 1_700_000_000_010, epoch: 7, trigger: "timer" });
  sink.emit({ type: "job-registered", instanceId, atMs: 1_700_000_000_020, epoch: 7, jobId: "job-1" });
  sink.logger.warn("Work message m-1 rejected to work-items-poison: not JSON", { instanceId, messageId: "m-1" });
  sink.emit({
    type: "step-completed",
    instanceId,
    atMs: 1_700_000_001_510,
    epoch: 7,
    passes: 2,
    registered: 1,
    dispatched: 3,
    folded: 0,
    duplicates: 0,
    failed: 0,
    rejected: 0,
    discarded: 0,
    jobErrors: 0,
    completedJobs: [],
    removedJobs: 0,
    redispatched: 0,
    activeJobs: 1,
    scheduledJobs: 0,
    jobs: [{ id: "job-1", total: 3, dispatched: 3, done: 0, failed: 0 }],
  });
  telemetry.recordWork({
    status: "failed",
    jobId: "job-1",
    kind: "group-by",
    item: 0,
    count: 3,
    itemsDone: 2,
    itemsFailed: 1,
    reason: "record 2: not a number",
  });
  const queue = (name: string, count: number): MemoryQueue => {
    const memory = new MemoryQueue(name);
    void memory.send(Array.from({ length: count }, (_, index) => `m${index}`));
    return memory;
  };
  const results = queue("work-results", 2);
  results.nowMs += 42_000;
  await telemetry.sampleQueues(
    {
      workQueue: queue("work-items", 5),
      resultsQueue: results,
      workPoisonQueue: queue("work-items-poison", 1),
      resultsPoisonQueue: queue("work-results-poison", 0),
      state: new MemoryStateStore(),
    },
    sink,
  );
  await telemetry.shutdown();
}

void main();
