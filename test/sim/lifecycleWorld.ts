import { Bitmap } from "../../src/coordination/state/bitmap";
import { jobStateSchema } from "../../src/coordination/state/jobState";
import type { WorkOutcome } from "../../src/coordination/worker/worker";
import { AbortError } from "../../src/library/errors";
import { storeExpiredJobs, type ExpiredJob } from "./retentionWorld";
import type { SimInstance, SimWorld } from "./world";

/**
 * Longest the simulated host renews a batch's visibility: its function timeout (minutes on Azure; shorter here, as the
 * visibility is). A delivery stuck on storage that never answers (`hang`) lets its message reappear after it.
 */
const FUNCTION_TIMEOUT_MS = 60_000;

/**
 * What issue 37's lifecycle models do in the world (`lifecycle.ts`): hosts that shut down while a unit runs — the
 * appTerminate hook fires the process's shutdown signal, which reaches the running unit; the host stops taking
 * messages, waits for the function, and ends the process; a new one starts — aimed at a unit's last delivery. And what
 * the invariants read: the items each unit's last delivery processed, in a delivery that ended with the process alive.
 */
export class SimLifecycle {
  /** Shutdowns armed: each strikes the next unit on its last delivery to finish an item, or after `untilMs` any. */
  private readonly armed: { untilMs: number }[] = [];
  /** Per job, the items a unit's last delivery processed (its handler then returned or threw; the process lived). */
  readonly doneOnLastDelivery = new Map<string, Set<number>>();
  /** Shutdowns that struck: when, which process, and whether on a unit's last delivery. */
  readonly shutdowns: { atMs: number; process: string; lastDelivery: boolean }[] = [];

  constructor(private readonly world: SimWorld) {}

  /** The plan's expired jobs, some with blobs that refuse deletion (`retentionWorld.ts`). */
  expiredJobs: ExpiredJob[] = [];
  /** Jobs whose removal a step reported as failed (`job-removal-failed`). */
  readonly removalFailures = new Set<string>();

  /** Arms the plan's shutdowns at their times, and stores the expired jobs (before any process runs). */
  start(systemContainer: string): void {
    this.expiredJobs = storeExpiredJobs(this.world, systemContainer);
    for (const shutdown of this.world.plan.lifecycle.shutdowns)
      this.world.at(shutdown.atS * 1000, () => {
        this.armed.push({ untilMs: Date.now() + shutdown.forS * 1000 });
      });
  }

  /** Messages an instance's host holds (received, not settled), by id. */
  private readonly held = new Map<string, SimInstance>();

  /**
   * The host renews the visibility of the messages it received while their function runs (the whole batch: the
   * simulated host runs them at once and takes the next batch when they all ended), every 5 s to 10 s ahead, while its
   * process lives and is not frozen, and for at most {@link FUNCTION_TIMEOUT_MS}; a message whose process died
   * reappears within 10 s. Done on the account directly (a renewal is a request the app does not make; it lands or
   * the message reappears, as here).
   */
  holdWhileRunning(instance: SimInstance, queue: string, messages: readonly { id: string }[]): void {
    for (const message of messages) this.held.set(message.id, instance);
    const untilMs = Date.now() + FUNCTION_TIMEOUT_MS;
    const renew = (): void => {
      const ids = messages.map((m) => m.id).filter((id) => this.held.get(id) === instance);
      if (ids.length === 0 || instance.process.crashed || this.world.over || Date.now() >= untilMs) return;
      if (!instance.process.frozen)
        for (const stored of this.world.account.queue(queue).messages)
          if (ids.includes(stored.id)) stored.visibleAtMs = Math.max(stored.visibleAtMs, Date.now() + 10_000);
      setTimeout(renew, 5000);
    };
    setTimeout(renew, 5000);
  }

  /**
   * Longest a delivery of this unit takes: the plan's `unitMs` for the units of the plan's jobs, 2 s for a burst's
   * one-item jobs (20–80 of them at 20 s each would outlast the 180 s every job has to end).
   */
  unitMs(text: string): number {
    const jobId = unitOf(text)?.jobId;
    const job = this.world.jobs.find((submitted) => submitted.id === jobId);
    return job !== undefined && this.world.plan.jobs.includes(job.plan) ? this.world.plan.lifecycle.unitMs : 2000;
  }

  /** The host settled a message (deleted it, or left it to reappear): no more renewals. */
  settled(id: string): void {
    this.held.delete(id);
  }

  /** A delivery on `instance` finished an item (`last`: on the unit's last delivery): a shutdown may strike now. */
  onItemDone(instance: SimInstance, last: boolean): void {
    const index = this.armed.findIndex((armed) => last || Date.now() >= armed.untilMs);
    if (index < 0 || instance.shutdown.signal.aborted || instance.process.crashed) return;
    this.armed.splice(index, 1);
    this.shutdowns.push({ atMs: Date.now(), process: instance.process.name, lastDelivery: last });
    instance.shutdown.abort(new AbortError("The app is shutting down (simulated deploy); running work stops."));
    // The host waits for the running function (the signal cuts its item's work short), then ends the process.
    setTimeout(() => {
      this.world.killWorker(instance);
    }, 2000);
  }

  /**
   * A delivery ended (returned `outcome`, or threw: undefined). A last delivery that ended with its process alive and
   * storage answering counts the items it processed (those not already failed: another copy of the unit — a
   * duplicate, a lapsed term's re-send — may have been failed before). A message a worker rejected, or whose last
   * delivery could not end cleanly (its process died, storage failed it or was impaired meanwhile), goes to the poison
   * queue on its own account: its items may be failed whatever another copy did.
   */
  onDeliveryEnded(
    instance: SimInstance,
    text: string,
    delivery: {
      last: boolean;
      startedMs: number;
      processed: readonly number[];
      outcome: WorkOutcome | undefined;
      storageTrouble: boolean;
    },
  ): void {
    const unit = unitOf(text);
    if (unit === undefined) return;
    const alive = !instance.process.crashed;
    if (delivery.outcome?.status === "rejected") this.excuse(unit);
    if (!delivery.last) return;
    const impaired = this.world.activityLog.impairments.some(
      (i) => i.process === instance.process && i.fromMs <= Date.now() && i.toMs >= delivery.startedMs,
    );
    if (delivery.outcome === undefined && (!alive || delivery.storageTrouble || impaired)) this.excuse(unit);
    if (!alive || delivery.storageTrouble) return;
    const done = this.doneOnLastDelivery.get(unit.jobId) ?? new Set<number>();
    const failed = this.failedNow(unit.jobId);
    for (const item of delivery.processed) if (!failed.has(item)) done.add(item);
    this.doneOnLastDelivery.set(unit.jobId, done);
  }

  /** The host moved a message to the poison queue because its last delivery died with its process. */
  onPoisonedOnItsOwn(text: string | undefined): void {
    const unit = text === undefined ? undefined : unitOf(text);
    if (unit !== undefined) this.excuse(unit);
  }

  /**
   * A worker's result was damaged on its way (issue 43's `garbageResults`): the leader cannot read it, so its items
   * may fail when their hold ends, however their last delivery went (`reportedItemNeverLeftFailed` judges those a
   * readable result reported done).
   */
  onResultDamaged(unit: { jobId: string; first: number; count: number }): void {
    this.excuse(unit);
  }

  /** Items of a job that a copy of their unit poisoned on its own account, or a damaged result, may have failed. */
  readonly failedByACopy = new Map<string, Set<number>>();

  private excuse(unit: { jobId: string; first: number; count: number }): void {
    const items = this.failedByACopy.get(unit.jobId) ?? new Set<number>();
    for (let item = unit.first; item < unit.first + unit.count; item++) items.add(item);
    this.failedByACopy.set(unit.jobId, items);
  }

  /** The items the job's stored state records as failed now. */
  private failedNow(jobId: string): Set<number> {
    const parsed = jobStateSchema.safeParse(this.world.jobState(jobId)?.value);
    if (!parsed.success) return new Set();
    const failed = Bitmap.fromBase64(parsed.data.failedBits, parsed.data.itemCount);
    return new Set(Array.from({ length: parsed.data.itemCount }, (_, i) => i).filter((i) => failed.has(i)));
  }
}

/** The job and items a work message names (v1: one item; v2: a unit), or undefined for one that is not JSON of one. */
function unitOf(text: string): { jobId: string; first: number; count: number } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const unit = value as { jobId?: unknown; first?: unknown; item?: unknown; inputs?: unknown };
  if (typeof unit.jobId !== "string") return undefined;
  const first = typeof unit.first === "number" ? unit.first : unit.item;
  if (typeof first !== "number") return undefined;
  return { jobId: unit.jobId, first, count: Array.isArray(unit.inputs) ? unit.inputs.length : 1 };
}

/** How many items a work message carries (1 for one that is not JSON of a unit). */
export function itemCountOf(text: string): number {
  return unitOf(text)?.count ?? 1;
}
