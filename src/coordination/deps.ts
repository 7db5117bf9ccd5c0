import type { CoordinationEvent } from "./ports/events.js";
import type { StateStore } from "../library/fencing/StateStore.js";
import type { Logger } from "../library/util/logger.js";
import type { BlobFiles, InputFiles, MessageQueue } from "./ports/ports.js";
import type { JobStopChecks } from "./state/jobStops.js";
import type { TaskRegistry } from "./kinds/taskRegistry.js";

/** The storage ports and task kinds of the app: the same code runs on Azure Storage and on fakes. */
export interface CoordinationPorts {
  /** Raw state store; the step wraps it in a `FencedStateStore` with the leader's term. */
  state: StateStore;
  /** The app's own blobs (system container): job specs, item chunks, inbox markers, large partials. */
  system: BlobFiles;
  /** The user's input blobs and manifests (input container), read only. */
  inputs: InputFiles;
  workQueue: MessageQueue;
  resultsQueue: MessageQueue;
  /** `<work queue>-poison`, where the host moves messages that exhausted their retries. */
  workPoisonQueue: MessageQueue;
  /** `<results queue>-poison`, where the leader moves result messages it cannot use. */
  resultsPoisonQueue: MessageQueue;
  registry: TaskRegistry;
}

/** Everything the coordination step needs: the ports, its limits, and where logs and events go. */
export interface CoordinationDeps extends CoordinationPorts {
  /** Most items dispatched per pass over all jobs (bounded fan-out). */
  dispatchBatchSize: number;
  /** Most items of one job on the queue without a result yet (the last unit sent may go past it). */
  maxInFlight: number;
  /**
   * Internal, not a setting: most items on the queue without a result over every job, the window the step shares out
   * by priority and fairness (`step/scheduledDispatch.ts`). @default 2 × `maxInFlight`
   */
  maxInFlightTotal?: number;
  /** Most items per work message (WORK_UNIT_MAX_ITEMS); a job's own limit is fixed when it registers (unitSize.ts). */
  workUnitMaxItems: number;
  /** Most items per work message of a job with items naming blobs (WORK_UNIT_MAX_BLOB_ITEMS), see `unitSize.ts`. */
  workUnitMaxBlobItems: number;
  /** Units a job's in-flight window is cut into (WORK_UNIT_SPREAD), see `unitSize.ts`. */
  workUnitSpread: number;
  /** Most bytes of JSON per work message (WORK_UNIT_MAX_BYTES), fixed per job when it registers. */
  workUnitMaxBytes: number;
  /**
   * Most groups a job's aggregate may hold (`MAX_AGGREGATE_GROUPS`); a job that would exceed it fails with the reason.
   */
  maxAggregateGroups: number;
  /**
   * Most bytes of JSON a job's stored document may have (`MAX_JOB_DOCUMENT_BYTES`); a job whose aggregate would make it
   * larger fails with the reason.
   */
  maxJobDocumentBytes: number;
  /**
   * Most bytes of an input blob a worker reads (`MAX_INPUT_BLOB_BYTES`); an item naming a larger one fails alone, with
   * its size and the limit, before any of it is downloaded.
   */
  maxInputBlobBytes: number;
  /**
   * How long an ended job is kept, in ms (`JOB_RETENTION_HOURS`): then the leader removes its state and blobs.
   */
  jobRetentionMs: number;
  /** Items of one unit a worker processes at once, for kinds that do not set their own (WORK_UNIT_CONCURRENCY). */
  workUnitConcurrency: number;
  /** How long a unit's first grant lasts, in ms (`FLOW_GRANT_SECONDS`; default `GRANT_LIFETIME_MS`). */
  grantLifetimeMs?: number;
  /**
   * Longest an item may keep the event loop from turning before the worker reports it (`item-held-event-loop`), in ms:
   * what a leader in the same process can go without its heartbeats (with takeover) or renewals. 0: never reported.
   */
  maxItemHoldMs: number;
  /** This process's checks of jobs' stop blobs (shared by its worker invocations). */
  jobStops: Pick<JobStopChecks, "isStopped">;
  logger: Logger;
  /** Structured events (job registered, completed, failed, message rejected). */
  emit: (event: CoordinationEvent) => void;
  instanceId: string;
  /** Wall clock, for timestamps in state. */
  now: () => number;
  /** Internal, not a setting: how a step's chunk cache is sized and watched (@default the cache's own constants). */
  chunkCache?: ChunkCacheOptions;
  /**
   * Internal, not a setting: how long held items wait for their unit's own result, in ms (`state/heldItems.ts`; the
   * simulator scales it to its minutes-long runs). @default `INFERRED_FAILURE_HOLD_MS` (10 minutes)
   */
  inferredFailureHoldMs?: number;
}

/**
 * Internal options of the leader's item-chunk cache (`dispatch/chunkCache.ts`), for the simulator, which scales the
 * large-chunk threshold down to its small jobs and checks what the leader holds (`leaderHeldChunkBytes`). No setting
 * reaches them.
 */
export interface ChunkCacheOptions {
  /**
   * Chunk text (characters of JSON, as `chunkChars` records it) over which a chunk is large: never read ahead, and at
   * most one held. @default `PREFETCH_MAX_CHUNK_BYTES` (1 MiB)
   */
  largeChunkChars?: number;
  /** Told of each cache a step makes, as it is made: what it holds can then be watched. */
  watch?: (cache: HeldChunks) => void;
}

/** What a chunk cache holds, as {@link ChunkCacheOptions.watch} sees it: blob names, whose sizes storage knows. */
export interface HeldChunks {
  /** The chunks it holds now: those it keeps, reads ahead that ended and wait to be taken, the chunk in hand. */
  readonly held: readonly string[];
  /** The chunk reads it waits for now (started, not yet answered): their text is held next. */
  readonly reading: readonly string[];
  /** The most text of small chunks it may hold besides one large chunk: its promise. */
  readonly smallChunksHeldBytes: number;
  /** The threshold it works with ({@link ChunkCacheOptions.largeChunkChars}). */
  readonly largeChunkChars: number;
}
