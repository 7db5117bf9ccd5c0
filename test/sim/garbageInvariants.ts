import { Bitmap } from "../../src/coordination/state/bitmap";
import type { SimGarbage } from "./garbageWorld";
import type { SimWorld } from "./world";

/** Issue 43's invariant, by name (the model is in `garbage.ts`). */
export const GARBAGE_INVARIANTS = {
  reportedItemNeverLeftFailed:
    "an item a readable result of its unit reported done (it reached the results queue) is not failed when its job ends, unless another readable result reported it failed, or it was held and its result came after the hold",
} as const;
export type GarbageInvariantName = keyof typeof GARBAGE_INVARIANTS;

/** What the job's stored states said, as they were written. */
interface Seen {
  /** Items ever held (a failure inferred from a message that named them: `heldBits`). */
  held: Set<number>;
  /** The latest end of the job's hold (`heldUntilMs`), wall clock. */
  heldUntilMs: number;
  /** The job's first ended state: its status, failed items and failure reasons, and when. */
  final?: { status: string; failed: Set<number>; reasons: Map<number, string>; atMs: number };
  reported: boolean;
}

/** Stored fields of a job state this check reads (those of a version without the hold are absent). */
interface StoredJob {
  status?: unknown;
  itemCount?: unknown;
  failedBits?: unknown;
  failures?: unknown;
  heldBits?: unknown;
  heldUntilMs?: unknown;
}

const ENDED = new Set(["completed", "failed", "cancelled", "expired"]);

/**
 * Checks `reportedItemNeverLeftFailed` as the run goes. A failure the leader infers from a message that names a unit
 * without reporting on it (garbage, a poisoned copy) may not decide the answer: the unit's own readable result, when it
 * landed before the hold on those items ended, must make them done whatever order the two were folded in. Items that
 * genuinely failed — a crash or bad item, which a worker reports failed, or a kill item, never reported — are excused
 * by construction: only items some readable result reported done are judged.
 */
export class GarbageChecks {
  private writesSeen = 0;
  private readonly seen = new Map<string, Seen>();

  constructor(
    private readonly world: SimWorld,
    private readonly garbage: SimGarbage,
    private readonly fail: (invariant: GarbageInvariantName, message: string) => void,
  ) {}

  private t(ms: number): string {
    return `${((ms - this.world.startMs) / 1000).toFixed(3)} s`;
  }

  afterStep(): void {
    const { account } = this.world;
    for (; this.writesSeen < account.writes.length; this.writesSeen++) {
      const write = account.writes[this.writesSeen];
      if (write?.container !== this.world.stateContainer || write.kind !== "write") continue;
      const id = /^jobs\/([^/]+)\.json$/.exec(write.name)?.[1];
      if (id !== undefined) this.onJobWrite(id, write.atMs);
    }
    for (const [jobId, seen] of this.seen) if (seen.final !== undefined && !seen.reported) this.check(jobId, seen);
  }

  private onJobWrite(jobId: string, atMs: number): void {
    const stored = this.world.jobState(jobId)?.value as StoredJob | undefined;
    if (typeof stored?.itemCount !== "number" || typeof stored.failedBits !== "string") return;
    const itemCount = stored.itemCount;
    const seen = this.seen.get(jobId) ?? { held: new Set<number>(), heldUntilMs: -Infinity, reported: false };
    this.seen.set(jobId, seen);
    if (typeof stored.heldBits === "string") for (const item of items(stored.heldBits, itemCount)) seen.held.add(item);
    if (typeof stored.heldUntilMs === "number") seen.heldUntilMs = Math.max(seen.heldUntilMs, stored.heldUntilMs);
    if (seen.final !== undefined || typeof stored.status !== "string" || !ENDED.has(stored.status)) return;
    const reasons = new Map<number, string>();
    if (Array.isArray(stored.failures))
      for (const failure of stored.failures as { item?: unknown; reason?: unknown }[])
        if (typeof failure.item === "number" && typeof failure.reason === "string")
          reasons.set(failure.item, failure.reason);
    seen.final = { status: stored.status, failed: new Set(items(stored.failedBits, itemCount)), reasons, atMs };
  }

  private check(jobId: string, seen: Seen): void {
    const final = seen.final;
    const done = this.garbage.reportedDone.get(jobId);
    if (final === undefined || done === undefined) return;
    const failedByWorker = this.garbage.reportedFailed.get(jobId);
    const left = [...final.failed]
      .filter((item) => {
        const landedMs = done.get(item);
        if (landedMs === undefined || failedByWorker?.has(item) === true) return false;
        // Held, and its result came only after the hold ended: the bound the leader promises, not a failure of it.
        return !(seen.held.has(item) && landedMs >= seen.heldUntilMs);
      })
      .sort((a, b) => a - b);
    if (left.length === 0) return;
    seen.reported = true;
    const job = this.world.jobs.find((submitted) => submitted.id === jobId);
    const first = left[0] ?? 0;
    const garbage = this.garbage.garbageLanded.length;
    this.fail(
      "reportedItemNeverLeftFailed",
      `job ${jobId} (${job?.plan.kind ?? "?"}, ${job?.plan.items.length ?? "?"} items) ended ${final.status} at ${this.t(final.atMs)} with items ${left.join(",")} failed, though a readable result of their unit reported them done (item ${first}'s landed at ${this.t(done.get(first) ?? 0)}; failed with "${(final.reasons.get(first) ?? "no reason recorded").slice(0, 160)}"${seen.held.has(first) ? `; held until ${this.t(seen.heldUntilMs)}` : ""}; ${garbage} unreadable result(s) landed in the run)`,
    );
  }
}

function items(bits: string, itemCount: number): number[] {
  const bitmap = Bitmap.fromBase64(bits, itemCount);
  return Array.from({ length: itemCount }, (_, item) => item).filter((item) => bitmap.has(item));
}
