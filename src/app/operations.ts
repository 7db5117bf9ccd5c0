import { StaleEpochError } from "../errors";
import type { CoordinationDeps } from "../coordination/deps";
import { runCoordinationStep, type StepReport } from "../coordination/step";
import { readJobStatus, type JobStatus } from "../coordination/status";
import { storeSubmission, validateSubmission, type FieldError } from "../coordination/submit";
import { processWorkMessage, type Delivery, type WorkOutcome } from "../coordination/worker";
import type { LeadResult } from "../leadership/LeaderElector";
import { describeLeader, requestStepDown, type LeaderInfo } from "../leadership/leaderInfo";
import { MAX_DEQUEUE_COUNT, type CoordinatorApp, type Sink } from "./context";

/** How a timer tick ended: "shutdown" when the signal had fired before a term began (nothing was led). */
export type TickOutcome = LeadResult<StepReport>["outcome"] | "shutdown" | "error";

/**
 * One timer tick: ONE attempt to lead, no waiting (serverless time is billed). The leader runs the coordination step
 * within the step budget under the leadership runner; a failed renewal aborts it through the term's signal. A
 * non-leader returns at once and logs who leads. Emits step-started / step-completed / step-aborted / step-skipped.
 * `abortSignal` is the process's shutdown: during a term it ends the term with reason "shutdown" (the lease is
 * released at once); before one, the tick is skipped.
 */
export async function runCoordinatorTick(app: CoordinatorApp, sink: Sink, options: { abortSignal?: AbortSignal } = {}): Promise<TickOutcome> {
  app.sink = sink;
  const { instanceId } = app;
  const at = (): number => Date.now();
  let epoch: number | undefined;
  try {
    const result = await app.elector.tryLead(async (term) => {
      epoch = term.epoch;
      sink.emit({ type: "step-started", instanceId, atMs: at(), epoch });
      return runCoordinationStep(coordinationDeps(app, sink), term, { budgetMs: app.settings.STEP_BUDGET_MS });
    }, options);
    if (result.outcome === "not-acquired") {
      const leader = result.leader;
      sink.logger.info(`Instance ${instanceId} is not the leader${leader ? `; ${leader.holder} leads with epoch ${leader.epoch}` : ""}.`);
      sink.emit({ type: "step-skipped", instanceId, atMs: at(), leader: leader?.holder, leaderEpoch: leader?.epoch });
    } else if (result.outcome === "completed") {
      sink.emit({ type: "step-completed", instanceId, atMs: at(), epoch: result.epoch, ...result.value });
    } else {
      const detail = result.error instanceof Error ? result.error.message : undefined;
      sink.emit({ type: "step-aborted", instanceId, atMs: at(), epoch: result.epoch, reason: result.reason, detail });
    }
    return result.outcome;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (epoch === undefined && options.abortSignal?.aborted === true) {
      sink.logger.info(`Instance ${instanceId} skips this tick: the app is shutting down.`);
      sink.emit({ type: "step-skipped", instanceId, atMs: at(), reason: "shutdown" });
      return "shutdown";
    }
    // A stale epoch means a newer leader exists: expected after a pause, not a failure of this app.
    const reason = error instanceof StaleEpochError ? "fenced" : "error";
    sink.emit({ type: "step-aborted", instanceId, atMs: at(), epoch, reason, detail: message });
    if (reason === "fenced") return "aborted";
    sink.logger.error(`Coordinator tick failed on ${instanceId}: ${message}`);
    throw error;
  }
}

/** The coordination ports of this app, with the invocation's sink. */
export function coordinationDeps(app: CoordinatorApp, sink: Sink): CoordinationDeps {
  const { state, files, workQueue, resultsQueue, workPoisonQueue, resultsPoisonQueue, registry } = app;
  return {
    state,
    files,
    workQueue,
    resultsQueue,
    workPoisonQueue,
    resultsPoisonQueue,
    registry,
    dispatchBatchSize: app.settings.DISPATCH_BATCH_SIZE,
    maxInFlight: app.settings.DISPATCH_BATCH_SIZE * 2,
    logger: sink.logger,
    emit: sink.emit,
    instanceId: app.instanceId,
    now: () => Date.now(),
  };
}

/** Handles one work-queue message (the `worker` function). */
export function handleWorkMessage(app: CoordinatorApp, sink: Sink, payload: unknown, delivery: Omit<Delivery, "maxDequeueCount">): Promise<WorkOutcome> {
  return processWorkMessage(coordinationDeps(app, sink), payload, { ...delivery, maxDequeueCount: MAX_DEQUEUE_COUNT });
}

/** Validates and stores a job submission. Field errors are a value (the HTTP layer answers 400 with them). */
export async function submitJob(app: CoordinatorApp, body: unknown, options: { abortSignal?: AbortSignal } = {}): Promise<{ ok: true; id: string; itemCount: number } | { ok: false; errors: FieldError[] }> {
  const validated = validateSubmission(body, app.registry);
  if (!validated.ok) return validated;
  const stored = await storeSubmission(app.files, validated.value, options);
  return { ok: true, ...stored };
}

/** A job's status, or undefined when there is no such job. */
export function getJobStatus(app: CoordinatorApp, id: string, options: { abortSignal?: AbortSignal } = {}): Promise<JobStatus | undefined> {
  return readJobStatus(app.state, app.files, app.registry, id, options);
}

/** Who leads. */
export function getLeader(app: CoordinatorApp, options: { abortSignal?: AbortSignal } = {}): Promise<LeaderInfo> {
  return describeLeader(app.leaseStore, options);
}

/** Asks the leader to step down; returns the revoked epoch or undefined when nobody leads. */
export function stepDown(app: CoordinatorApp, options: { abortSignal?: AbortSignal } = {}): Promise<number | undefined> {
  return requestStepDown(app.leaseStore, options);
}
