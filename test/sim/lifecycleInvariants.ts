import { Bitmap } from "../../src/coordination/state/bitmap";
import { jobStateSchema } from "../../src/coordination/state/jobState";
import { RetentionChecks } from "./retentionInvariants";
import type { SimWorld } from "./world";

/** Issue 37's invariants, by name (the models are in `lifecycle.ts`). */
export const LIFECYCLE_INVARIANTS = {
  everyLapsedUnitSentAgain:
    "after a lapsed term, the next term's re-send of a job covers every item the job had in flight (its tail past the window too)",
  noDoneItemFailedLater:
    "an item a unit's last delivery processed, in a delivery that ended with its process alive (a shutdown included), is never recorded as failed (unless a copy of its unit was poisoned on its own account, or its worker's result was damaged on its way)",
  noStepBlockedByOneJob:
    "a blob of one job that refuses deletion (a legal hold) never fails a step, and its job's failed removal is reported",
} as const;
export type LifecycleInvariantName = keyof typeof LIFECYCLE_INVARIANTS;

/** A re-send begun: the write that counted it, and what the job had in flight then. */
interface Resend {
  jobId: string;
  by: string;
  epoch: number;
  atMs: number;
  open: number[];
  /** Work sends that had landed before it (the re-send's are after). */
  sendsBefore: number;
}

/** Checks issue 37's invariants as the run goes; `fail` records a violation. */
export class LifecycleChecks {
  private writesSeen = 0;
  private readonly redispatches = new Map<string, number>();
  private readonly resends = new Map<string, Resend>();

  private readonly retention: RetentionChecks;

  constructor(
    private readonly world: SimWorld,
    private readonly fail: (invariant: LifecycleInvariantName, message: string) => void,
  ) {
    this.retention = new RetentionChecks(world, (message) => {
      fail("noStepBlockedByOneJob", message);
    });
  }

  atEnd(): void {
    this.retention.atEnd();
  }

  private t(ms: number): string {
    return `${((ms - this.world.startMs) / 1000).toFixed(3)} s`;
  }

  afterStep(): void {
    this.retention.afterStep();
    const { account } = this.world;
    for (; this.writesSeen < account.writes.length; this.writesSeen++) {
      const write = account.writes[this.writesSeen];
      if (write?.container !== this.world.stateContainer || write.kind !== "write") continue;
      const match = /^jobs\/([^/]+)\.json$/.exec(write.name);
      if (match?.[1] === undefined || write.epoch === undefined) continue;
      this.onJobWrite(match[1], write.by, write.epoch, write.atMs);
    }
  }

  /**
   * A job's state was written: a write that counts a re-send (`redispatches` up by one) opens one; the next write of
   * the job by the same term closes it, and by then the re-send has ended (the step sends it before it goes on).
   */
  private onJobWrite(jobId: string, by: string, epoch: number, atMs: number): void {
    const parsed = jobStateSchema.safeParse(this.world.jobState(jobId)?.value);
    if (!parsed.success) return;
    const state = parsed.data;
    this.checkDoneNotFailed(jobId, state.failedBits, state.itemCount, atMs);
    const before = this.redispatches.get(jobId) ?? 0;
    const now = state.redispatches ?? 0;
    this.redispatches.set(jobId, now);
    const open = this.resends.get(jobId);
    if (open !== undefined && open.by === by && open.epoch === epoch) {
      this.resends.delete(jobId);
      // Counted again: that re-send failed part-way (storage refused a send) and the step tries again.
      if (now <= before) this.checkResend(open);
    }
    if (now > before && state.status === "running") {
      const done = Bitmap.fromBase64(state.doneBits, state.itemCount);
      const failed = Bitmap.fromBase64(state.failedBits, state.itemCount);
      const inFlight = Array.from({ length: state.dispatched }, (_, i) => i).filter(
        (i) => !done.has(i) && !failed.has(i),
      );
      this.resends.set(jobId, {
        jobId,
        by,
        epoch,
        atMs,
        open: inFlight,
        sendsBefore: this.world.account.workSends.length,
      });
    }
  }

  private readonly failedDone = new Set<string>();

  private checkDoneNotFailed(jobId: string, failedBits: string, itemCount: number, atMs: number): void {
    const done = this.world.lifecycle.doneOnLastDelivery.get(jobId);
    if (done === undefined || this.failedDone.has(jobId)) return;
    const failed = Bitmap.fromBase64(failedBits, itemCount);
    // A copy of the unit that went to the poison queue on its own account (its process died on its last delivery, a
    // worker rejected it) fails its items legitimately: the first outcome the leader folds counts. So does a result
    // damaged on its way: the leader never had a readable report of those items.
    const byACopy = this.world.lifecycle.failedByACopy.get(jobId);
    const both = [...done].filter((item) => failed.has(item) && byACopy?.has(item) !== true).sort((a, b) => a - b);
    if (both.length === 0) return;
    this.failedDone.add(jobId);
    const shutdowns = this.world.lifecycle.shutdowns
      .map((s) => `${s.process} at ${this.t(s.atMs)}${s.lastDelivery ? " on a last delivery" : ""}`)
      .join(", ");
    this.fail(
      "noDoneItemFailedLater",
      `job ${jobId}: items ${both.join(",")} were processed on their unit's last delivery, which ended with its process alive, and are recorded as failed at ${this.t(atMs)} (shutdowns: ${shutdowns.length > 0 ? shutdowns : "none"})`,
    );
  }

  private checkResend(resend: Resend): void {
    const covered = new Set<number>();
    for (const send of this.world.account.workSends.slice(resend.sendsBefore)) {
      if (send.by !== resend.by) continue;
      const unit = JSON.parse(send.text) as { jobId?: string; first?: number; inputs?: unknown[] };
      if (unit.jobId !== resend.jobId || unit.first === undefined) continue;
      for (let offset = 0; offset < (unit.inputs?.length ?? 1); offset++) covered.add(unit.first + offset);
    }
    const missing = resend.open.filter((item) => !covered.has(item));
    if (missing.length > 0)
      this.fail(
        "everyLapsedUnitSentAgain",
        `the term of epoch ${resend.epoch} (${resend.by}) began re-sending job ${resend.jobId} at ${this.t(resend.atMs)}, ${resend.open.length} items in flight (${resend.open.join(",")}), and sent again all but items ${missing.join(",")}: they wait for the host's visibility timeout`,
      );
  }
}
