import type { CoordinationDeps } from "../coordination/deps.js";
import type { CoordinatorApp, Sink } from "./context.js";
import { DEFAULT_REQUEST_TIMEOUT_MS } from "../library/leadership/options.js";
import type { Settings } from "./settings.js";

/**
 * Longest a worker's item may hold the event loop before it is reported, in ms: what a leader in the same process
 * survives without its timers running — with takeover the longest a heartbeat may take,
 * `min(LEASE_TAKEOVER_DEADLINE_MS − LEASE_HEARTBEAT_INTERVAL_MS, LEASE_TAKEOVER_DEADLINE_MS / 2)` (1,250 ms at the
 * defaults); without, the same of the renewals (5,000 ms); and never more than its lease requests' timeout (3,000 ms:
 * an answer that waits for the thread that long times the request out).
 */
export function maxItemHoldMs(settings: Settings): number {
  const takeover = settings.LEASE_TAKEOVER_DEADLINE_MS > 0;
  const deadline = takeover ? settings.LEASE_TAKEOVER_DEADLINE_MS : settings.LEASE_RENEW_DEADLINE_MS;
  const interval = takeover ? settings.LEASE_HEARTBEAT_INTERVAL_MS : settings.LEASE_RENEW_INTERVAL_MS;
  return Math.min(deadline - interval, deadline / 2, DEFAULT_REQUEST_TIMEOUT_MS);
}

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
    grantLifetimeMs: app.settings.FLOW_GRANT_SECONDS * 1000,
    maxItemHoldMs: maxItemHoldMs(app.settings),
    jobStops: app.jobStops,
    workUnitMaxItems: app.settings.WORK_UNIT_MAX_ITEMS,
    workUnitMaxBytes: app.settings.WORK_UNIT_MAX_BYTES,
    workUnitMaxBlobItems: app.settings.WORK_UNIT_MAX_BLOB_ITEMS,
    workUnitSpread: app.settings.WORK_UNIT_SPREAD,
    logger: sink.logger,
    emit: sink.emit,
    instanceId: app.instanceId,
    now: () => Date.now(),
    ...(app.chunkCache === undefined ? {} : { chunkCache: app.chunkCache }),
    ...(app.inferredFailureHoldMs === undefined ? {} : { inferredFailureHoldMs: app.inferredFailureHoldMs }),
  };
}
