import type { CoordinationDeps } from "../coordination/deps.js";
import type { CoordinatorApp, Sink } from "./context.js";

/** The coordination ports of this app, with the invocation's sink. */
export function coordinationDeps(app: CoordinatorApp, sink: Sink): CoordinationDeps {
  const { state, system, inputs, workQueue, resultsQueue, workPoisonQueue, resultsPoisonQueue, registry } = app;
  return {
    state,
    system,
    inputs,
    workQueue,
    resultsQueue,
    workPoisonQueue,
    resultsPoisonQueue,
    registry,
    dispatchBatchSize: app.settings.DISPATCH_BATCH_SIZE,
    maxInFlight: app.settings.DISPATCH_BATCH_SIZE * 2,
    maxAggregateGroups: app.settings.MAX_AGGREGATE_GROUPS,
    maxJobDocumentBytes: app.settings.MAX_JOB_DOCUMENT_BYTES,
    jobRetentionMs: app.settings.JOB_RETENTION_HOURS * 3_600_000,
    maxInputBlobBytes: app.settings.MAX_INPUT_BLOB_BYTES,
    workUnitConcurrency: app.settings.WORK_UNIT_CONCURRENCY,
    jobStops: app.jobStops,
    workUnitMaxItems: app.settings.WORK_UNIT_MAX_ITEMS,
    workUnitMaxBytes: app.settings.WORK_UNIT_MAX_BYTES,
    workUnitMaxBlobItems: app.settings.WORK_UNIT_MAX_BLOB_ITEMS,
    workUnitSpread: app.settings.WORK_UNIT_SPREAD,
    logger: sink.logger,
    emit: sink.emit,
    instanceId: app.instanceId,
    now: () => Date.now(),
  };
}
