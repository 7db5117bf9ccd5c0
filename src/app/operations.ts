import { StaleEpochError } from "../library/errors.js";
import { requestCancel } from "../coordination/jobs/cancel.js";
import type { StepReport } from "../coordination/step/step.js";
import { readJobStatus, type JobStatus } from "../coordination/jobs/status.js";

export { UnreadableJobError } from "../coordination/state/jobState.js";
import { storeSubmission, validateSubmission } from "../coordination/jobs/submit.js";
import { parseMessage } from "../coordination/ports/messages.js";
import { sendWakeUp, wakeMessageSchema, type WakeMessage } from "../coordination/wake/wake.js";
import { storeManifestSubmission } from "../coordination/jobs/manifest.js";
import { resolveIdempotencyKey } from "../coordination/jobs/idempotency.js";
import { storeSubmissionOnce } from "../coordination/jobs/submitOnce.js";
import { processWorkMessage, type Delivery, type WorkOutcome } from "../coordination/worker/worker.js";
import type { LeadResult } from "../library/leadership/LeaderElector.js";
import type { LeaderRecord } from "../library/lease/LeaseStore.js";
import type { Abortable } from "../library/util/delay.js";
import type { CancelResult, SubmitJobOptions, SubmitOptions, SubmitResult, WakeUpReport } from "./results.js";

export type { CancelResult, SubmitOptions, SubmitResult, WakeUpReport } from "./results.js";
import { describeLeader, requestStepDown, type LeaderInfo } from "../library/leadership/leaderInfo.js";
import { MAX_DEQUEUE_COUNT, type CoordinatorApp, type Sink } from "./context.js";
import { coordinationDeps } from "./coordinationDeps.js";
import { leaderStep, type StepTrigger } from "./leaderStep.js";

export { coordinationDeps } from "./coordinationDeps.js";
export { IDLE_STEP_SURFACE_S } from "./leaderStep.js";
import { renderStatusPage, statusPageHeaders } from "./renderStatusPage.js";
import { readStatusView } from "./statusView.js";

/** How a timer tick ended: "shutdown" when the signal had fired before a term began (nothing was led). */
export type TickOutcome = LeadResult<StepReport>["outcome"] | "shutdown" | "error";

/** Options of {@link runCoordinatorTick}; `abortSignal` is the process's shutdown signal. */
export interface TickOptions extends Abortable {
  /** What started the attempt, for the step events. @default { trigger: "timer" } */
  trigger?: StepTrigger;
}

/**
 * One timer tick: ONE attempt to lead, no waiting (serverless time is billed). The leader runs the coordination step
 * within the step budget under the leadership runner; a failed renewal aborts it through the term's signal. A
 * non-leader returns at once and logs who leads. Emits step-started / step-completed / step-aborted / step-skipped.
 * `abortSignal` is the process's shutdown: during a term it ends the term with reason "shutdown" (the lease is
 * released at once); before one, the tick is skipped. The elector logs this attempt and its term to `sink`, and
 * emits their leadership events there: concurrent invocations of one process never see each other's.
 */
export async function runCoordinatorTick(
  app: CoordinatorApp,
  sink: Sink,
  options: TickOptions = {},
): Promise<TickOutcome> {
  return (await runTick(app, sink, options)).outcome;
}

/** {@link runCoordinatorTick}, saying who holds the lease when it was not acquired (when that is known). */
async function runTick(
  app: CoordinatorApp,
  sink: Sink,
  options: TickOptions,
): Promise<{ outcome: TickOutcome; holder?: LeaderRecord }> {
  const { instanceId } = app;
  const trigger = options.trigger ?? { trigger: "timer" };
  const at = (): number => Date.now();
  // The leader's work, should this attempt win: the elector runs its task inside the term.
  const step = leaderStep(app, sink, trigger);
  try {
    const result = await app.elector.tryLead(step.task, {
      abortSignal: options.abortSignal,
      logger: sink.logger,
      onEvent: (event) => sink.emit({ ...event }),
    });
    if (result.outcome === "not-acquired") {
      const leader = result.leader;
      sink.logger.info(
        `Instance ${instanceId} is not the leader${leader ? `; ${leader.holder} leads with epoch ${leader.epoch}` : ""}.`,
      );
      sink.emit({
        type: "step-skipped",
        instanceId,
        atMs: at(),
        leader: leader?.holder,
        leaderEpoch: leader?.epoch,
        ...trigger,
      });
    } else if (result.outcome === "completed") {
      sink.emit({ type: "step-completed", instanceId, atMs: at(), epoch: result.epoch, ...result.value });
    } else {
      const detail = result.error instanceof Error ? result.error.message : undefined;
      sink.emit({ type: "step-aborted", instanceId, atMs: at(), epoch: result.epoch, reason: result.reason, detail });
    }
    return result.outcome === "not-acquired"
      ? { outcome: result.outcome, ...(result.leader === undefined ? {} : { holder: result.leader }) }
      : { outcome: result.outcome };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const { epoch } = step;
    if (epoch === undefined && options.abortSignal?.aborted === true) {
      sink.logger.info(`Instance ${instanceId} skips this tick: the app is shutting down.`);
      sink.emit({ type: "step-skipped", instanceId, atMs: at(), reason: "shutdown", trigger: trigger.trigger });
      return { outcome: "shutdown" };
    }
    // A stale epoch means a newer leader exists: expected after a pause, not a failure of this app.
    const reason = error instanceof StaleEpochError ? "fenced" : "error";
    sink.emit({ type: "step-aborted", instanceId, atMs: at(), epoch, reason, detail: message });
    if (reason === "fenced") return { outcome: "aborted" };
    sink.logger.error(`Coordinator tick failed on ${instanceId}: ${message}`);
    if (epoch !== undefined && typeof error === "object" && error !== null) failedInTerm.add(error);
    throw error;
  }
}

/**
 * Errors of steps that failed within their term: the step's sentinel (when leaders keep one) starts the next step,
 * later with each failure in a row (`leaderStep.ts`), so a wake-up does not have the host deliver it again too.
 */
const failedInTerm = new WeakSet<object>();

/** How a wake-up ended: as a tick, or "coalesced" (this process already runs one), or "rejected" (malformed). */
export type WakeOutcome = TickOutcome | "coalesced" | "rejected";

/**
 * One wake-up message (the `wake` function): ONE leadership attempt and, when it wins, one step — the tick's own code
 * path, no waiting for the lease. Losing the race is a normal outcome and the message is consumed: the leader's step
 * will see the news. A wake-up that arrives while this process already has an attempt or a step in progress is a
 * no-op (`step-skipped`, reason "coalesced"), so a burst of wake-ups costs at most one lease attempt per process at a
 * time. A malformed message is logged (`message-rejected`) and consumed. A step that fails in its term is not
 * retried by the host when leaders keep a sentinel: the step left it to start the next step, later with each failure in
 * a row. Any other failure is retried by the host (the error is rethrown) except on the last delivery: a wake-up never
 * goes to the poison queue, the timer is the heartbeat.
 */
export async function handleWakeMessage(
  app: CoordinatorApp,
  sink: Sink,
  payload: unknown,
  delivery: Abortable & { dequeueCount: number },
): Promise<WakeOutcome> {
  const { instanceId } = app;
  const parsed = parseMessage(wakeMessageSchema, payload);
  if (!parsed.ok) {
    sink.logger.warn(`Wake-up message rejected on ${instanceId}: ${parsed.reason}`);
    sink.emit({
      type: "message-rejected",
      instanceId,
      atMs: Date.now(),
      queue: app.wakeQueue.name,
      reason: parsed.reason,
    });
    return "rejected";
  }
  const wake: WakeMessage = parsed.value;
  // This process is busy with a job: watch the leader, so a dead one is replaced in seconds (with takeover).
  app.leaderWatch.activity();
  if (app.elector.busy) {
    sink.logger.info(
      `Instance ${instanceId} already runs a leadership attempt or a step; wake-up (${wake.reason}) coalesced into it.`,
    );
    sink.emit({
      type: "step-skipped",
      instanceId,
      atMs: Date.now(),
      reason: "coalesced",
      trigger: "wake",
      wakeReason: wake.reason,
      wakeJobId: wake.jobId,
    });
    // This process may die in that step, and its own wake-ups with it: look again in one interval (unless its sentinel
    // covers that).
    if (needsFollowUp(app, wake, undefined))
      await sendActivityWakeUp(app, sink, "follow-up", () =>
        app.activityWakeUps.followUp(wake, { abortSignal: delivery.abortSignal }),
      );
    return "coalesced";
  }
  const trigger = {
    trigger: "wake",
    wakeReason: wake.reason,
    wakeJobId: wake.jobId,
    wakeDelayMs: Math.max(0, Date.now() - wake.sentAtMs),
    ...(wake.followUp === undefined ? {} : { wakeFollowUp: wake.followUp }),
  } as const;
  try {
    const { outcome, holder } = await runTick(app, sink, { abortSignal: delivery.abortSignal, trigger });
    // The holder may have just died: look again in one interval, until its lease has run out or the chain ends (unless
    // the holder's sentinel and this process's watcher cover that).
    if (outcome === "not-acquired" && needsFollowUp(app, wake, holder))
      await sendActivityWakeUp(app, sink, "follow-up", () =>
        app.activityWakeUps.followUp(wake, { abortSignal: delivery.abortSignal }),
      );
    return outcome;
  } catch (error) {
    // A step that failed in its term left its sentinel to start the next one, backing off (issue 37, item 6b): a
    // redelivery every few seconds besides would re-run a failing step without one.
    if (
      app.settings.LEADER_SENTINEL_SECONDS > 0 &&
      typeof error === "object" &&
      error !== null &&
      failedInTerm.has(error)
    ) {
      sink.logger.warn(
        `Wake-up step failed on ${instanceId}; not retried by the host: its sentinel starts the next step, later with each failure in a row: ${error instanceof Error ? error.message : "unknown error"}`,
      );
      return "error";
    }
    if (delivery.dequeueCount < MAX_DEQUEUE_COUNT) throw error;
    sink.logger.error(
      `Wake-up step failed on its last delivery (${delivery.dequeueCount}); not retried, the next timer tick will run the step: ${error instanceof Error ? error.message : String(error)}`,
    );
    return "error";
  }
}

/** Wake-ups about work a leader's step looks after anyway: results, poison, and the sentinel itself. */
const STEP_NEWS: ReadonlySet<string> = new Set(["results-arrived", "poison-arrived", "leader-sentinel"]);

/**
 * Whether a wake-up that found the lease held (or this process busy) must send a follow-up. Not for news a step looks
 * after anyway, when leaders keep a sentinel and this process watches the leader (with takeover): a live holder's step
 * folds the news, or ends with jobs left and its sentinel starts the next step; a holder that died is taken over by
 * this process's watcher (armed by this very wake-up), and its sentinel surfaces for the others. Submissions and
 * cancellations still send follow-ups: a holder whose step is ending without active jobs may not have listed them.
 */
function needsFollowUp(app: CoordinatorApp, wake: WakeMessage, holder: LeaderRecord | undefined): boolean {
  const covered =
    app.settings.LEADER_SENTINEL_SECONDS > 0 &&
    app.leaderWatch.enabled &&
    STEP_NEWS.has(wake.reason) &&
    // A holder that does not heartbeat (takeover off where it runs, or a version before takeover) cannot be taken over
    // by this process's watcher, nor does it keep a sentinel: its lease is followed up as before.
    (holder === undefined || (holder.takeoverDeadlineMs ?? 0) > 0);
  return !covered;
}

/**
 * Handles one work-queue message (the `worker` function). Whatever it sent the leader — a result, or a message to the
 * poison queue — it then wakes the coordinator (at most once per ACTIVITY_WAKE_INTERVAL_MS per process), so the result
 * is folded now even when no step is running. A failure to send the wake-up is logged and changes nothing else.
 */
export async function handleWorkMessage(
  app: CoordinatorApp,
  sink: Sink,
  payload: unknown,
  delivery: Omit<Delivery, "maxDequeueCount">,
  options: Abortable = {},
): Promise<WorkOutcome> {
  // A job is active: watch the leader, so a dead one is replaced in seconds (with takeover;
  // coordination/wake/leaderWatch).
  app.leaderWatch.activity();
  let outcome: WorkOutcome;
  try {
    outcome = await processWorkMessage(
      coordinationDeps(app, sink),
      payload,
      { ...delivery, maxDequeueCount: MAX_DEQUEUE_COUNT },
      options,
    );
  } catch (error) {
    // On the last delivery the worker reported the item as failed before rethrowing (and the host poisons the message).
    if (delivery.dequeueCount >= MAX_DEQUEUE_COUNT)
      await sendActivityWakeUp(app, sink, "results-arrived", () =>
        app.activityWakeUps.activity("results-arrived", undefined),
      );
    throw error;
  }
  // A unit of a stopped job whose items were all skipped, or one sent again whole, sent nothing the leader needs.
  if ((outcome.status === "stopped" && outcome.skipped === outcome.count) || outcome.status === "resent")
    return outcome;
  const reason = outcome.status === "rejected" ? "poison-arrived" : "results-arrived";
  if (reason === "results-arrived" && leaderSeenLive(app)) return outcome;
  await sendActivityWakeUp(app, sink, reason, () =>
    app.activityWakeUps.activity(reason, "jobId" in outcome ? outcome.jobId : undefined),
  );
  return outcome;
}

/**
 * How long before a seen leader's step ends, by the wall clock, a result still wakes the coordinator: 2 s. The
 * instances' clocks may disagree by this much; and the step's last look at the results queue, at its end
 * (`leaderStep.ts`), sees what landed before.
 */
const STEP_END_MARGIN_MS = 2000;

/**
 * Whether a result needs no wake-up: this process's watcher read the lease within the last two watch intervals and
 * found a holder that heartbeats and had not fallen silent, leaders keep a sentinel, and that holder's step (one term:
 * it began when the record says, and ends within STEP_BUDGET_MS) has more than STEP_END_MARGIN_MS left. Then, as for a
 * wake-up's follow-ups (`needsFollowUp`), that holder's step folds the result — a later pass, or its last look when
 * it ends idle, whose sentinel then starts the next step within LEADER_SENTINEL_SECONDS, not IDLE_STEP_SURFACE_S
 * (issue 43, hole 3) —; a holder that dies is taken over by this process's watcher. Each wake-up skipped saves a send,
 * a receive, a delete and a `wake` execution that reads the lease (issue 35).
 */
function leaderSeenLive(app: CoordinatorApp): boolean {
  const { settings } = app;
  if (settings.LEADER_SENTINEL_SECONDS === 0) return false;
  const since = app.leaderWatch.liveLeaderSince(2 * settings.LEADER_WATCH_INTERVAL_MS);
  return since !== undefined && Date.now() + STEP_END_MARGIN_MS < since + settings.STEP_BUDGET_MS;
}

/** Sends an activity wake-up or follow-up; a failure is logged, never thrown (the timer is the heartbeat). */
async function sendActivityWakeUp(
  app: CoordinatorApp,
  sink: Sink,
  what: string,
  send: () => Promise<unknown>,
): Promise<void> {
  try {
    await send();
  } catch (error) {
    sink.logger.warn(
      `Instance ${app.instanceId} could not send a wake-up (${what}); the next timer tick or wake-up will do: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** Sends a wake-up unless `wake` is false; a failure is reported, not thrown (the timer is the heartbeat). */
async function wakeCoordinator(
  app: CoordinatorApp,
  reason: string,
  jobId: string,
  options: SubmitOptions,
): Promise<WakeUpReport> {
  if (options.wake === false) return { wakeUp: "off" };
  try {
    await sendWakeUp(app.wakeQueue, { reason, jobId, from: app.instanceId }, { abortSignal: options.abortSignal });
    return { wakeUp: "sent" };
  } catch (error) {
    return { wakeUp: "failed", wakeUpError: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * Validates and stores a job submission — its items, or the items of the manifest it names (read line by line from
 * the input container) — then wakes the coordinator (one message on WAKE_QUEUE). Field errors are a value (the HTTP
 * layer answers 400 with them). A wake-up that cannot be sent does not fail the submission: the job is stored, and the
 * next timer tick starts it; the result says so (`wakeUp: "failed"`). With an idempotency key (the body's, or
 * `options.idempotencyKey`: the `Idempotency-Key` header), the submission is made once (`storeSubmissionOnce`): a
 * replay answers the first job's id and wakes nobody unless it had to complete that job.
 */
export async function submitJob(
  app: CoordinatorApp,
  body: unknown,
  options: SubmitJobOptions = {},
): Promise<SubmitResult> {
  const validated = validateSubmission(body, app.registry);
  const key = resolveIdempotencyKey(validated.ok ? validated.value.idempotencyKey : undefined, options.idempotencyKey);
  if (!validated.ok) return { ok: false, errors: [...validated.errors, ...(key.ok ? [] : [key.error])] };
  if (!key.ok) return { ok: false, errors: [key.error] };
  const { abortSignal } = options;
  if (key.key !== undefined) {
    const once = await storeSubmissionOnce(app, { ...validated.value, idempotencyKey: key.key }, { abortSignal });
    if (!once.ok) return once;
    const wake = once.wrote
      ? await wakeCoordinator(app, "job-submitted", once.id, options)
      : { wakeUp: "off" as const };
    return { ok: true, id: once.id, itemCount: once.itemCount, ...(once.replayed ? { replayed: true } : {}), ...wake };
  }
  const { manifest, items, ...header } = validated.value;
  const result =
    manifest !== undefined
      ? await storeManifestSubmission(app, { ...header, manifest }, { abortSignal })
      : {
          ok: true as const,
          ...(await storeSubmission(app.system, { ...header, items: items ?? [] }, { abortSignal })),
        };
  if (!result.ok) return result;
  return {
    ok: true,
    id: result.id,
    itemCount: result.itemCount,
    ...(await wakeCoordinator(app, "job-submitted", result.id, options)),
  };
}

/**
 * Requests cancellation of a job, then wakes the coordinator: the leader ends the job as `cancelled` at its next step.
 * `not-found` for no such job; `ended` (with its status) for a job already completed, cancelled or expired. Asking
 * again before the leader has applied the request is accepted again. A wake-up that cannot be sent leaves the request
 * to the next timer tick (`wakeUp: "failed"`).
 */
export async function cancelJob(app: CoordinatorApp, id: string, options: SubmitOptions = {}): Promise<CancelResult> {
  const result = await requestCancel(app, id, { abortSignal: options.abortSignal });
  if (result.outcome !== "requested") return result;
  return { ...result, ...(await wakeCoordinator(app, "job-cancel-requested", id, options)) };
}

/** A job's status, or undefined when there is no such job. */
export function getJobStatus(app: CoordinatorApp, id: string, options: Abortable = {}): Promise<JobStatus | undefined> {
  return readJobStatus(app.state, app.system, app.registry, id, options);
}

/** Who leads. */
export function getLeader(app: CoordinatorApp, options: Abortable = {}): Promise<LeaderInfo> {
  return describeLeader(app.leaseStore, options);
}

/** Asks the leader to step down; returns the revoked epoch or undefined when nobody leads. */
export function stepDown(app: CoordinatorApp, options: Abortable = {}): Promise<number | undefined> {
  return requestStepDown(app.leaseStore, options);
}

/** The status page: its HTML and the response headers (CSP with `nonce`, a fresh random value per response). */
export async function getStatusPage(
  app: CoordinatorApp,
  options: Abortable & { nonce: string },
): Promise<{ html: string; headers: Record<string, string> }> {
  const view = await readStatusView(app, { abortSignal: options.abortSignal });
  return { html: renderStatusPage(view, { nonce: options.nonce }), headers: statusPageHeaders(options.nonce) };
}
