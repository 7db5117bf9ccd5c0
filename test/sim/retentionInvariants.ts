import { StorageError } from "../../src/library/errors";
import type { SimWorld } from "./world";

/** Steps that failed on a blob that refuses deletion, and jobs whose refused removal nobody reported. */
export class RetentionChecks {
  private tickErrorsSeen = 0;

  constructor(
    private readonly world: SimWorld,
    private readonly fail: (message: string) => void,
  ) {}

  private t(ms: number): string {
    return `${((ms - this.world.startMs) / 1000).toFixed(3)} s`;
  }

  /** A step that failed because one job's blob refuses deletion: the coordinator stops for one job's trouble. */
  afterStep(): void {
    const { tickErrors } = this.world.history;
    for (; this.tickErrorsSeen < tickErrors.length; this.tickErrorsSeen++) {
      const failure = tickErrors[this.tickErrorsSeen];
      if (!(failure?.error instanceof StorageError) || failure.error.code !== "BlobImmutableDueToLegalHold") continue;
      const held = this.world.account.refusedDeletes.map((refused) => refused.name);
      this.fail(
        `the tick of ${failure.process}${failure.epoch === undefined ? "" : ` (epoch ${failure.epoch})`} failed at ${this.t(failure.atMs)} because one job's blob refuses deletion (${[...new Set(held)].join(", ")}; ${held.length} deletes refused so far): ${failure.error.message.slice(0, 200)}`,
      );
    }
  }

  /** Every expired job whose removal met a blob that refuses deletion was reported (`job-removal-failed`). */
  atEnd(): void {
    const { lifecycle, account } = this.world;
    for (const job of lifecycle.expiredJobs) {
      const refused = account.refusedDeletes.filter((r) => r.name.startsWith(`jobs/${job.id}/`));
      if (refused.length === 0 || lifecycle.removalFailures.has(job.id)) continue;
      this.fail(
        `job ${job.id}'s removal met a blob that refuses deletion (${refused.length} deletes of ${refused[0]?.name ?? "?"} refused, the first at ${this.t(refused[0]?.atMs ?? 0)}) and was never reported (no job-removal-failed event)`,
      );
    }
  }
}
