/**
 * Structured events of the coordination logic: a job's registration and end, and a message it refused. The app adds
 * the leadership and step events (`src/app/events.ts`); all share `type`, `instanceId` and `atMs`.
 */

/** Fields every coordination event carries. */
interface EventBase {
  /** The instance that emitted it. */
  instanceId: string;
  /** Wall-clock ms. */
  atMs: number;
}

/** The leader registered a submitted job. */
export interface JobRegisteredEvent extends EventBase {
  type: "job-registered";
  epoch: number;
  jobId: string;
}

/** Counts of a job that has ended, as the step takes it off the active list. */
interface JobEndedBase extends EventBase {
  epoch: number;
  jobId: string;
  /** Items done. */
  done: number;
  /** Items failed. */
  failed: number;
}

/** Every item of a job is done or failed. */
export interface JobCompletedEvent extends JobEndedBase {
  type: "job-completed";
}

/** A job failed as a whole (e.g. its aggregate went over `MAX_AGGREGATE_GROUPS`). */
export interface JobFailedEvent extends JobEndedBase {
  type: "job-failed";
  /** Why, when recorded. */
  reason: string | undefined;
}

/** A job was cancelled on request, or expired at its deadline, before every item was done. */
export interface JobStoppedEvent extends JobEndedBase {
  type: "job-cancelled" | "job-expired";
  /** Items never processed (recorded when the job stopped). */
  skipped?: number;
}

/** A queue message was refused (malformed, or naming nothing it can use) and moved aside or consumed. */
export interface MessageRejectedEvent extends EventBase {
  type: "message-rejected";
  /** The leader's epoch, when the leader rejected it. */
  epoch?: number;
  /** The queue it came from. */
  queue: string;
  messageId?: string;
  /** What was wrong with it. */
  reason: string;
}

/**
 * A job's part of a pass failed (storage refused a send, its document could not be read — for dispatch, or while
 * folding its results or poison, whose messages are then left on their queues —, …): the step went on with the other
 * jobs, and tries this one again in its next pass. At most one a job per pass.
 */
export interface JobPassFailedEvent extends EventBase {
  type: "job-pass-failed";
  epoch: number;
  jobId: string;
  /** What went wrong. */
  error: string;
}

/**
 * The leader removed everything of a job that had been ended for JOB_RETENTION_HOURS: its state, spec, item chunks,
 * outcome blobs and markers. Its status now answers 404.
 */
export interface JobRemovedEvent extends EventBase {
  type: "job-removed";
  epoch: number;
  jobId: string;
  /** When the job ended (wall-clock ms). */
  endedAtMs: number;
  /** Blobs of the system container removed with it (in the step that finished the removal). */
  blobs: number;
}

/**
 * The leader could not remove an ended job past its retention (a blob storage refuses to delete: a legal hold, an
 * immutability policy): the job stays readable, the other jobs' removal and the step go on, and the removal is tried
 * again at `retryAtMs` (the back-off doubles from an hour to a day with each attempt).
 */
export interface JobRemovalFailedEvent extends EventBase {
  type: "job-removal-failed";
  epoch: number;
  jobId: string;
  /** When the job ended (wall-clock ms). */
  endedAtMs: number;
  /** Attempts that failed so far, this one included. */
  attempts: number;
  /** When the removal is tried again (wall-clock ms; the first step after it). */
  retryAtMs: number;
  /** What went wrong. */
  error: string;
}

/**
 * A worker's item kept the event loop from turning for longer than a leader in the same process can go without its
 * heartbeats or renewals (synchronous work: parsing, hashing, a CPU-bound loop). A leader there may have lost its
 * term (with takeover, after 2.5 s without a heartbeat), and every timer of the process waited. The kind should await
 * between smaller pieces of work, or run it in a worker thread (docs/how-to/add-a-kind.md#what-a-kind-must-not-do).
 */
export interface ItemHeldEventLoopEvent extends EventBase {
  type: "item-held-event-loop";
  jobId: string;
  /** The task kind whose item it was. */
  kind: string;
  /** The item's index in its job. */
  item: number;
  /** The longest the event loop did not turn while the item ran, in ms (measured to about 50 ms). */
  heldMs: number;
  /** What the process allows (`maxItemHoldMs`), in ms. */
  limitMs: number;
}

/** Every event of the coordination logic. */
export type CoordinationEvent =
  | ItemHeldEventLoopEvent
  | JobRegisteredEvent
  | JobCompletedEvent
  | JobFailedEvent
  | JobStoppedEvent
  | JobPassFailedEvent
  | JobRemovedEvent
  | JobRemovalFailedEvent
  | MessageRejectedEvent;
