import type { CoordinationDeps } from "../deps.js";
import type { RegisteredKind } from "../kinds/taskRegistry.js";
import { LoopHoldWatch } from "./loopHold.js";

/**
 * One item through a task kind: the call, and its hold of the event loop, reported when it is longer than a leader in
 * this process survives without heartbeats (`item-held-event-loop`). The worker (`worker.ts`) runs a unit's items
 * through it.
 */

/** What an item's call needs of the worker's deps. */
type HoldDeps = Pick<CoordinationDeps, "maxItemHoldMs" | "logger" | "emit" | "instanceId" | "now">;

/** The turns of this process's event loop, for items that hold it too long (`item-held-event-loop`). */
const loopHolds = new LoopHoldWatch();

/**
 * One item through the kind, its hold of the event loop reported when it settles: a synchronous kind's partial comes
 * back as it is, an asynchronous kind's as a promise that reports the hold once it settles.
 */
export function processItem(
  deps: HoldDeps,
  kind: RegisteredKind,
  unit: { jobId: string; params: unknown },
  data: Parameters<RegisteredKind["process"]>[0],
  item: number,
  signal: AbortSignal,
): unknown {
  const hold = loopHolds.begin();
  let partial: unknown;
  try {
    partial = kind.process(data, {
      params: unit.params,
      jobId: unit.jobId,
      index: item,
      idempotencyKey: `${unit.jobId}/${item}`,
      abortSignal: signal,
      logger: deps.logger,
    });
  } catch (error) {
    reportHold(deps, unit.jobId, kind.name, item, loopHolds.end(hold));
    throw error;
  }
  if (!isThenable(partial)) {
    reportHold(deps, unit.jobId, kind.name, item, loopHolds.end(hold));
    return partial;
  }
  return settleHold(partial, deps, unit.jobId, kind.name, item, hold);
}

/** An asynchronous kind's partial awaited, then its hold reported, however it settles. */
async function settleHold(
  partial: PromiseLike<unknown>,
  deps: HoldDeps,
  jobId: string,
  kind: string,
  item: number,
  hold: ReturnType<typeof loopHolds.begin>,
): Promise<unknown> {
  try {
    return await partial;
  } finally {
    reportHold(deps, jobId, kind, item, loopHolds.end(hold));
  }
}

/** Whether `value` has a `then` method: what `await` would wait for. */
export function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { then?: unknown }).then === "function"
  );
}

/** Emits `item-held-event-loop` when an item held the event loop longer than the process allows. */
function reportHold(deps: HoldDeps, jobId: string, kind: string, index: number, heldMs: number): void {
  const limitMs = deps.maxItemHoldMs;
  if (limitMs <= 0 || heldMs <= limitMs) return;
  const item = { jobId, kind, item: index };
  deps.logger.warn(
    `Item ${item.item} of job ${item.jobId} (kind "${item.kind}") held the event loop for ${Math.round(heldMs)} ms, longer than the ${limitMs} ms a leader in this process can go without heartbeats or renewals: await between smaller pieces of work, or run it in a worker thread (docs/how-to/add-a-kind.md#what-a-kind-must-not-do)`,
    { instanceId: deps.instanceId },
  );
  deps.emit({
    type: "item-held-event-loop",
    instanceId: deps.instanceId,
    atMs: deps.now(),
    ...item,
    heldMs: Math.round(heldMs),
    limitMs,
  });
}
