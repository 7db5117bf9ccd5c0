import { z } from "zod";
import type { CoordinationDeps } from "../deps.js";
import { itemRefOf, parseMessage, toRanges, fromRanges, workMessageSchema, type ItemInput } from "../ports/messages.js";
import { originalText, rejectionReason, rejectionText } from "../ports/rejection.js";
import { issuesText } from "../kinds/standardSchema.js";
import { ItemError } from "../kinds/taskKinds.js";
import { PartialMerger, type RegisteredKind } from "../kinds/taskRegistry.js";
import { abortReason, delay, throwIfAborted, type Abortable } from "../../library/util/delay.js";
import { timeSlicer } from "../../library/util/timeSlice.js";
import { isThenable, processItem } from "./itemCall.js";
import { inputOf, readInputBlob } from "./workerInputs.js";
import { sendItemResult, sendUnitResult } from "./workerResults.js";
import { resendOnShutdown } from "./workerResend.js";
import { claimGrant, gateOf, grantReport, markClaim, sendRegrant } from "./grantedUnit.js";
import { GrantExpiredError, type TakenShares, type UnitGate } from "../flow/unitGate.js";

/** What the worker needs: a subset of the coordination deps (malformed messages go to `workPoisonQueue`). */
export type WorkerDeps = Pick<
  CoordinationDeps,
  | "system"
  | "inputs"
  | "resultsQueue"
  | "workQueue"
  | "workPoisonQueue"
  | "registry"
  | "maxInputBlobBytes"
  | "workUnitConcurrency"
  | "maxItemHoldMs"
  | "jobStops"
  | "logger"
  | "emit"
  | "instanceId"
  | "now"
>;

/** Delivery facts the host gives the trigger. */
export interface Delivery {
  /** The queue message id. */
  id: string;
  /** 1 on first delivery. */
  dequeueCount: number;
  /** host.json `extensions.queues.maxDequeueCount`: on this delivery a failure is final. */
  maxDequeueCount: number;
}

/**
 * How the worker handled a message: `processed` when every item of it succeeded, `failed` when some did not,
 * `stopped` when its job was stopped (cancelled or ended) before every item was processed (`skipped` were not),
 * `resent` when the host shut down during its last delivery and the unit was put on the work queue again, whole
 * (nothing reported: its items count when the copy is processed), `regranted` when a granted unit went back to the
 * leader whole, `copy` when another copy of a granted unit runs it (this one did nothing); the unit's task kind, and
 * how many of its `count` items were reported done and failed.
 */
export type WorkOutcome =
  | ({ status: "processed"; reason?: undefined } & UnitCounts)
  | ({ status: "failed"; reason: string } & UnitCounts)
  | ({ status: "stopped"; reason?: undefined; skipped: number } & UnitCounts)
  | ({ status: "resent"; reason: string } & UnitCounts)
  | ({ status: "regranted"; reason: string } & UnitCounts)
  | ({ status: "copy"; reason: string } & UnitCounts)
  | { status: "rejected"; reason: string };

/** A unit's counts in a {@link WorkOutcome}. */
interface UnitCounts {
  jobId: string;
  kind: string;
  item: number;
  count: number;
  itemsDone: number;
  itemsFailed: number;
}

/** The newest work message version this worker knows (`v` of {@link workMessageSchema}). */
const NEWEST_WORK_MESSAGE_VERSION = 3;

/**
 * While a unit runs, how old a "not stopped" answer about its job may be before an item starts (and how often a unit
 * whose items are still running looks again, to abort them), in ms. Each unit also looks once when it starts.
 */
export const STOP_CHECK_INTERVAL_MS = 1000;

/**
 * Longest a worker runs items back to back before it lets the process's timers and I/O run, in ms: between items, once
 * this much time has passed since it last gave the thread up, it waits for the event loop's next turn.
 */
export const WORKER_SLICE_MS = 10;

/**
 * The slice every unit running in this process shares. Items whose work holds the thread (parsing, hashing) would
 * otherwise run back to back until an item awaits I/O — with inline items, only the stop check once a second — and
 * the process's timers (a leader's heartbeats and renewals, which takeover counts; the stop watch) and I/O would wait.
 */
const workerSlice = timeSlicer(WORKER_SLICE_MS);

/** Why a unit's items were aborted: its job was stopped. Not a failure of any item. */
class JobStoppedSignal extends Error {
  constructor(jobId: string) {
    super(`job ${jobId} was cancelled or has ended`);
    this.name = "JobStoppedSignal";
  }
}

/**
 * Handles one work message: a unit of items (or one item, from a leader before units). Never lets bad input crash
 * the worker: a malformed message is moved to the poison queue with the reason at once (retrying cannot fix it) —
 * but one of a task kind this worker lacks only on its last delivery, thrown back before
 * ({@link throwUnlessLastDelivery}). The unit's items run through the kind's `process`, at most the kind's concurrency
 * at once; an item whose input is unusable fails alone, with its reason; the partials of the others are merged with the
 * kind's `merge`, and ONE result names the items done and failed. A transient failure of any item aborts the others and
 * is thrown so the host retries the whole unit; on the last delivery the items it hit are reported as failed instead,
 * with the others' results, so the job can finish. So is a shutdown (`options.abortSignal`): the unit is delivered
 * again — on its last delivery, as a copy this worker puts on the work queue ({@link resendOnShutdown}), since the host
 * would move it to the poison queue and the leader fail every item of it, those already done too (so also when the
 * shutdown aborts the result's send, after every item is done). The job's stop blob is checked when the unit starts
 * and before each item (at most {@link STOP_CHECK_INTERVAL_MS} old): once the job is stopped, no more of its items
 * start, those running are aborted, and only the items already processed are reported.
 */
export async function processWorkMessage(
  deps: WorkerDeps,
  payload: unknown,
  delivery: Delivery,
  options: Abortable = {},
): Promise<WorkOutcome> {
  throwIfNewer(deps, payload, delivery);
  const parsed = parseMessage(workMessageSchema, payload);
  if (!parsed.ok) return reject(deps, payload, delivery, parsed.reason, options);
  const message = parsed.value;
  const kind = deps.registry.get(message.kind);
  if (kind === undefined) {
    const why = `unknown task kind "${message.kind}"; known kinds: ${deps.registry.names().join(", ")}`;
    throwUnlessLastDelivery(deps, delivery, why);
    return reject(deps, payload, delivery, why, options);
  }
  const params = kind.parseParams(message.params);
  if (!params.ok)
    return reject(
      deps,
      payload,
      delivery,
      `params are not valid for "${message.kind}": ${issuesText(params.issues)}`,
      options,
    );

  const { jobId } = message;
  const first = message.v === 1 ? message.item : message.first;
  const inputs = message.v === 1 ? [message.input] : message.inputs;
  const unitCounts = { jobId, kind: message.kind, item: first, count: inputs.length };
  if (message.v === 3) return processGranted(deps, kind, message, params.value, delivery, options, unitCounts);
  // A shutdown on the last delivery, while the items run or while their result is sent: the unit goes out again whole.
  const resendIfShutDown = async (error: unknown): Promise<WorkOutcome> => {
    if (options.abortSignal?.aborted !== true || delivery.dequeueCount < delivery.maxDequeueCount) throw error;
    const reason = await resendOnShutdown(deps, payload, delivery, unitCounts, error);
    return { status: "resent", ...unitCounts, itemsDone: 0, itemsFailed: 0, reason };
  };
  let run: UnitRun;
  try {
    run = await runItems(deps, kind, { jobId, first, inputs, params: params.value }, delivery, options);
  } catch (error) {
    return resendIfShutDown(error);
  }
  try {
    return await reportRun(deps, kind, message, unitCounts, run, options);
  } catch (error) {
    return resendIfShutDown(error);
  }
}

type GrantedMessage = Extract<z.infer<typeof workMessageSchema>, { v: 3 }>;
type Counts = Pick<UnitCounts, "jobId" | "kind" | "item" | "count">;

/**
 * A granted unit's delivery (its job is limited: `grantedUnit.ts`): it runs only once it has claimed the grant, and
 * marks the claim reported once its result or give-back is sent. Whatever stops it short goes back to the leader (a
 * regrant), never to the queue — but a transient failure of its items, which the host retries as for any unit.
 */
async function processGranted(
  deps: WorkerDeps,
  kind: RegisteredKind,
  message: GrantedMessage,
  params: unknown,
  delivery: Delivery,
  options: Abortable,
  unitCounts: Counts,
): Promise<WorkOutcome> {
  const gate = gateOf(message, deps.now);
  const regranted = async (why: string, how: Parameters<typeof sendRegrant>[4] = {}): Promise<WorkOutcome> => {
    await sendRegrant(deps, message, gate, why, how);
    return { status: "regranted", ...unitCounts, itemsDone: 0, itemsFailed: 0, reason: why };
  };
  const copy = (reason: string): WorkOutcome => ({
    status: "copy",
    ...unitCounts,
    itemsDone: 0,
    itemsFailed: 0,
    reason,
  });
  let claim: Awaited<ReturnType<typeof claimGrant>>;
  try {
    claim = await claimGrant(deps, message, gate, delivery, options);
  } catch (error) {
    // Its claim failed (storage trouble): held, since another copy may have claimed and run it.
    return regrantOrThrow(() => regranted(`its claim failed: ${errorText(error)}`, { held: true }), error);
  }
  if (claim === "copy") return copy("another copy runs it");
  if (claim === "reported") return copy("an earlier delivery reported it");
  if (claim === "earlier")
    return regranted("an earlier delivery claimed its grant and may still run it (frozen, or died)", {
      held: true,
      lost: true,
    });
  if (claim === "expired") return regranted("its grant expired before it started", { expired: true });
  const outcome = await runClaimed(deps, kind, message, { params, gate, unitCounts, regranted }, delivery, options);
  // Its report (result or give-back) was sent: a later delivery of its message does nothing.
  await markClaim(deps, message, delivery, "reported");
  return outcome;
}

/** Runs a granted unit whose grant this delivery claimed, and reports it. */
async function runClaimed(
  deps: WorkerDeps,
  kind: RegisteredKind,
  message: GrantedMessage,
  unit: {
    params: unknown;
    gate: UnitGate;
    unitCounts: Counts;
    regranted: (why: string, how?: { expired?: boolean }) => Promise<WorkOutcome>;
  },
  delivery: Delivery,
  options: Abortable,
): Promise<WorkOutcome> {
  const { jobId, first, inputs } = message;
  let run: UnitRun;
  try {
    run = await runItems(deps, kind, { jobId, first, inputs, params: unit.params, gate: unit.gate }, delivery, options);
  } catch (error) {
    // A transient failure of its items (every item has stopped): the host retries it, as any unit, with its claim
    // released, so the next delivery runs it under the grant (the host's retries count; the last reports failures).
    if (options.abortSignal?.aborted !== true) {
      await markClaim(deps, message, delivery, "released");
      throw error;
    }
    return regrantOrThrow(() => unit.regranted(`its run was shut down: ${errorText(error)}`), error);
  }
  if (run.expired === true) return unit.regranted("its grant expired before every item started", { expired: true });
  try {
    return await reportRun(deps, kind, message, unit.unitCounts, run, options);
  } catch (error) {
    // Its result was not sent (a shutdown, storage trouble): back to the leader, since a redelivery of its message
    // may not run under its grant; the items it ran run again under a new one.
    return regrantOrThrow(() => unit.regranted(`its result could not be sent: ${errorText(error)}`), error);
  }
}

/** An error's message. */
function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The regrant `send` makes, or `error` (the run's) when it fails. */
async function regrantOrThrow(send: () => Promise<WorkOutcome>, error: unknown): Promise<WorkOutcome> {
  try {
    return await send();
  } catch {
    throw error;
  }
}

/** Sends the leader what a unit's run gave (one result naming the items done and failed) and says how it went. */
async function reportRun(
  deps: WorkerDeps,
  kind: RegisteredKind,
  message: z.infer<typeof workMessageSchema>,
  unitCounts: Pick<UnitCounts, "jobId" | "kind" | "item" | "count">,
  run: UnitRun,
  options: Abortable,
): Promise<WorkOutcome> {
  const { jobId, item: first, count } = unitCounts;
  const { done, partials, failures } = run;
  const failed = [...failures].map(([reason, items]) => ({ items: toRanges(items), reason: reason.slice(0, 2000) }));
  if (run.skipped === count) {
    // Its job stopped: a granted unit still gives its grant back.
    if (message.v === 3 && run.gate !== undefined)
      await sendRegrant(deps, message, run.gate, "its job was stopped before any item started");
    return { status: "stopped", ...unitCounts, itemsDone: 0, itemsFailed: 0, skipped: count };
  }
  if (message.v === 1) {
    const [failure] = failed;
    const tooLarge = await sendItemResult(
      deps,
      failure === undefined
        ? { v: 1, jobId, item: first, ok: true, partial: kind.hasAggregate ? partials.result() : null }
        : { v: 1, jobId, item: first, ok: false, reason: failure.reason },
      options,
    );
    if (tooLarge !== undefined) failed.push({ items: [[first, first]], reason: tooLarge });
  } else {
    const tooLarge = await sendUnitResult(
      deps,
      {
        v: 2,
        jobId,
        first,
        count,
        done: toRanges(done),
        ...(partials.count > 0 ? { partial: kind.hasAggregate ? partials.result() : null } : {}),
        failed,
      },
      options,
      message.v === 3 && run.gate !== undefined ? grantReport(message, run.gate) : undefined,
    );
    if (tooLarge !== undefined) failed.push({ items: toRanges(done), reason: tooLarge });
  }
  const itemsFailed = failed.reduce((sum, failure) => sum + fromRanges(failure.items).length, 0);
  const counts = {
    ...unitCounts,
    itemsDone: count - run.skipped - itemsFailed,
    itemsFailed,
  };
  if (run.skipped > 0) return { status: "stopped", ...counts, skipped: run.skipped };
  if (failed.length === 0) return { status: "processed", ...counts };
  return { status: "failed", ...counts, reason: failed.map((failure) => failure.reason).join("; ") };
}

/** The items of one unit, as {@link runItems} takes them. */
interface UnitItems {
  jobId: string;
  first: number;
  inputs: readonly ItemInput[];
  params: unknown;
  /** A granted unit's gate: its items start only under the unit's shares of its limits, before the grant expires. */
  gate?: UnitGate | undefined;
}

/** What running a unit's items gave: items done with their partials, items failed by reason, items not processed. */
interface UnitRun {
  done: number[];
  /** Merged as items finish: a unit of up to 1,000 items never holds every item's partial at once (issue 24). */
  partials: PartialMerger;
  failures: Map<string, number[]>;
  skipped: number;
  /** The grant expired before every item started: the unit goes back to the leader, whole. */
  expired?: boolean;
  /** The granted unit's gate, for its report. */
  gate?: UnitGate | undefined;
}

/**
 * Runs a unit's items through the kind, at most its concurrency at once, under one signal: the host's shutdown, the
 * job's stop, or a transient failure of another item. Throws the first transient failure (or the shutdown's reason)
 * once every item has settled, unless this is the last delivery.
 */
async function runItems(
  deps: WorkerDeps,
  kind: RegisteredKind,
  unit: UnitItems,
  delivery: Delivery,
  options: Abortable,
): Promise<UnitRun> {
  const { jobId, first, inputs } = unit;
  const lastDelivery = delivery.dequeueCount >= delivery.maxDequeueCount;
  const { gate } = unit;
  const run: UnitRun = { done: [], partials: new PartialMerger(kind), failures: new Map(), skipped: 0, gate };
  const fail = (item: number, reason: string): void => {
    const items = run.failures.get(reason) ?? [];
    items.push(item);
    run.failures.set(reason, items);
  };
  if (await deps.jobStops.isStopped(jobId, { maxAgeMs: 0 })) return { ...run, skipped: inputs.length };
  const unitControl = new AbortController();
  const signal =
    options.abortSignal === undefined ? unitControl.signal : AbortSignal.any([options.abortSignal, unitControl.signal]);
  let transient: { error: unknown } | undefined;
  const watch = watchForStop(deps, jobId, unitControl);
  // A granted unit's items stop at its grant's expiry: the leader may hand the shares on from a grace later.
  const expiry = gate === undefined ? undefined : expireAt(gate, unitControl);
  const runItem = async (input: ItemInput, offset: number): Promise<void> => {
    const item = first + offset;
    if (!signal.aborted && (await deps.jobStops.isStopped(jobId, { maxAgeMs: STOP_CHECK_INTERVAL_MS })))
      unitControl.abort(new JobStoppedSignal(jobId));
    if (signal.aborted) {
      // Stopped: skipped. Shut down, or another item failed transiently: the unit is delivered again.
      if (unitControl.signal.reason instanceof JobStoppedSignal) run.skipped++;
      return;
    }
    let shares: TakenShares | undefined;
    try {
      const data =
        "inline" in input
          ? inputOf(undefined, input.inline)
          : await readInputBlob(deps, input.blob, { abortSignal: signal });
      // Checked right before the kind runs, in the same synchronous run (no await between): see startNow.
      let ready: { shares: TakenShares | undefined } | undefined;
      while ((ready = startNow(gate, offset, signal)) === undefined) await waitToStart(gate, offset, signal);
      shares = ready.shares;
      let produced: unknown;
      try {
        produced = processItem(deps, kind, unit, data, item, signal);
      } finally {
        shares?.started(); // after the kind's synchronous start, whether it threw: the start its rate counts
      }
      // Awaited only when it can be (a promise, or any thenable, which a promise would adopt too): a synchronous
      // kind's partial is used as it is, without a promise and a turn of the microtask queue per item (issue 35).
      const partial = isThenable(produced) ? await produced : produced;
      if (kind.hasAggregate) run.partials.add(partial);
      run.done.push(item);
    } catch (error) {
      if (unitControl.signal.reason instanceof JobStoppedSignal) {
        run.skipped++;
        return;
      }
      if (error instanceof GrantExpiredError) unitControl.abort(error);
      if (unitControl.signal.reason instanceof GrantExpiredError) return; // the whole unit goes back
      if (options.abortSignal?.aborted === true) return; // shutting down: the unit is delivered again
      const reason = error instanceof Error ? error.message : String(error);
      if (error instanceof ItemError) fail(item, reason);
      else if (lastDelivery)
        fail(item, `failed on all ${delivery.maxDequeueCount} deliveries; last error: ${reason}`.slice(0, 2000));
      else {
        // transient: the host retries the whole unit (its results are not sent, so nothing counts twice)
        transient ??= { error };
        unitControl.abort(error);
      }
    } finally {
      shares?.release();
    }
  };
  try {
    await forEachAtMost(kind.concurrency ?? deps.workUnitConcurrency, inputs, runItem);
  } finally {
    if (expiry !== undefined) clearTimeout(expiry);
    await watch.stop();
  }
  if (transient !== undefined) throw transient.error;
  if (unitControl.signal.reason instanceof GrantExpiredError) return { ...run, expired: true };
  return settledRun(run, inputs.length, options);
}

/**
 * A unit's run once every item settled: its items in order; throws the shutdown's reason when the host shut down
 * before every item was done, failed or skipped (the unit is delivered again).
 */
function settledRun(run: UnitRun, count: number, options: Abortable): UnitRun {
  const settled = run.done.length + [...run.failures.values()].reduce((sum, items) => sum + items.length, 0);
  if (options.abortSignal?.aborted === true && settled + run.skipped < count) throw abortReason(options.abortSignal);
  run.done.sort((a, b) => a - b);
  for (const items of run.failures.values()) items.sort((a, b) => a - b);
  return run;
}

/**
 * Whether an item may start now, checked right before its kind runs, in the same synchronous run: the worker's slice
 * (items of several units whose awaits — stop check, input — resolved in one turn take turns with the timers instead
 * of running back to back), then a granted item's shares, taken (the gate counts the start when the caller says the
 * kind was called). Undefined: wait ({@link waitToStart}) and ask again. Throws the signal's reason once it aborts
 * (stopped or shut down meanwhile), and GrantExpiredError once the grant expires.
 */
function startNow(
  gate: UnitGate | undefined,
  offset: number,
  signal: AbortSignal,
): { shares: TakenShares | undefined } | undefined {
  if (workerSlice.spent()) return undefined;
  throwIfAborted(signal);
  if (gate === undefined) return { shares: undefined };
  const shares = gate.tryTake(offset);
  return shares === undefined ? undefined : { shares };
}

/** Waits for what {@link startNow} lacked: the worker's next slice, or the item's shares. */
async function waitToStart(gate: UnitGate | undefined, offset: number, signal: AbortSignal): Promise<void> {
  if (workerSlice.spent()) await workerSlice();
  else await gate?.ready(offset, signal);
}

/** Aborts a granted unit's items at its grant's expiry (wall clock); the timer, to clear when the unit settles. */
function expireAt(gate: UnitGate, control: AbortController): NodeJS.Timeout {
  const timer = setTimeout(() => control.abort(new GrantExpiredError(gate.grantId)), gate.msUntilExpiry());
  timer.unref();
  return timer;
}

/**
 * Runs `run` on each of `items`, in order of index, at most `concurrency` at once: that many runners, each taking the
 * next item when its last one settles. `run` must not throw (a unit's item catches its own failure). A unit runs up
 * to 1,000 items: a runner per slot rather than a queued closure and promises per item (a concurrency-limit library's
 * way) saves a few µs per item, a large share of a small item's whole cost (`npm run bench:unit`).
 */
async function forEachAtMost<T>(
  concurrency: number,
  items: readonly T[],
  run: (item: T, index: number) => Promise<void>,
): Promise<void> {
  if (!(Number.isInteger(concurrency) && concurrency >= 1))
    throw new RangeError(`concurrency is ${String(concurrency)}; it must be a whole number of at least 1`);
  let next = 0;
  const runner = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      await run(items[index] as T, index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, runner));
}

/**
 * While a unit runs, looks at its job's stop blob every {@link STOP_CHECK_INTERVAL_MS} and aborts the unit's items when
 * it appears. `stop()` ends the watch and waits for it.
 */
function watchForStop(
  deps: Pick<WorkerDeps, "jobStops">,
  jobId: string,
  unit: AbortController,
): { stop: () => Promise<void> } {
  const done = new AbortController();
  const watching = (async () => {
    const signal = AbortSignal.any([done.signal, unit.signal]);
    while (!signal.aborted) {
      try {
        await delay(STOP_CHECK_INTERVAL_MS, { abortSignal: signal });
      } catch {
        return;
      }
      if (await deps.jobStops.isStopped(jobId, { maxAgeMs: STOP_CHECK_INTERVAL_MS }))
        unit.abort(new JobStoppedSignal(jobId));
    }
  })();
  return {
    stop: async () => {
      done.abort();
      await watching;
    },
  };
}

/**
 * Throws for a work message of a version newer than this worker knows — sent, in a rolling deploy, by a leader already
 * upgraded — instead of rejecting it: a rejection would fail all its items at once, though an upgraded worker would do
 * them. The host retries it (another instance, upgraded, may take it) and after its last delivery moves it, intact, to
 * the poison queue, where the leader that sent it — which knows its version — records its items as failed. Each
 * delivery logs why, since the host's poison message carries no reason.
 */
function throwIfNewer(deps: WorkerDeps, payload: unknown, delivery: Delivery): void {
  const newer = parseMessage(newerVersionSchema, payload);
  if (!newer.ok) return;
  const why = `work message ${delivery.id} is of version ${newer.value.v}; this worker knows versions 1–${NEWEST_WORK_MESSAGE_VERSION}: left for a newer worker (delivery ${delivery.dequeueCount} of ${delivery.maxDequeueCount}; then the host moves it to ${deps.workPoisonQueue.name} and the leader that sent it fails its items)`;
  deps.logger.warn(why, { instanceId: deps.instanceId });
  throw new Error(why);
}

/**
 * Throws for a work message of a task kind this worker lacks, except on its last delivery: in a rolling deploy that
 * adds the kind, an instance still on the old version takes units an upgraded one would do, and a rejection would fail
 * all their items at once. The host retries it (another instance, upgraded, may take it); on the last delivery the
 * caller rejects it with the reason, so a kind no instance has (removed by a deploy) still fails its items and the job
 * ends. Each delivery logs why, since the host's retries carry no reason.
 */
function throwUnlessLastDelivery(deps: WorkerDeps, delivery: Delivery, why: string): void {
  if (delivery.dequeueCount >= delivery.maxDequeueCount) return;
  const text = `work message ${delivery.id}: ${why}: left for an instance that has the kind (delivery ${delivery.dequeueCount} of ${delivery.maxDequeueCount}; on the last it is rejected to ${deps.workPoisonQueue.name} with this reason)`;
  deps.logger.warn(text, { instanceId: deps.instanceId });
  throw new Error(text);
}

/** Any message whose `v` is a version newer than {@link NEWEST_WORK_MESSAGE_VERSION}, whatever else it holds. */
const newerVersionSchema = z.object({ v: z.number().int().gt(NEWEST_WORK_MESSAGE_VERSION) });

/**
 * Moves a malformed work message to the poison queue with the reason, at once (retrying cannot fix it). Never throws
 * for what the message holds, and its rejection always fits a queue message ({@link rejectionText}): a rejection that
 * failed would fail every delivery, and the host would poison the message without the reason.
 */
async function reject(
  deps: WorkerDeps,
  payload: unknown,
  delivery: Delivery,
  why: string,
  options: Abortable,
): Promise<WorkOutcome> {
  const reason = rejectionReason(why);
  deps.logger.warn(`Work message ${delivery.id} rejected to ${deps.workPoisonQueue.name}: ${reason}`, {
    instanceId: deps.instanceId,
  });
  deps.emit({
    type: "message-rejected",
    instanceId: deps.instanceId,
    atMs: deps.now(),
    queue: "work",
    messageId: delivery.id,
    reason,
  });
  // Naming the job and items, when the message got that far, lets the leader record them as failed with the reason.
  const header = { by: "worker" as const, reason, messageId: delivery.id, atMs: deps.now(), ...itemRefOf(payload) };
  await deps.workPoisonQueue.send([rejectionText(header, originalText(payload))], options);
  return { status: "rejected", reason };
}
