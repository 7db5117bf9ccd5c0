import { jobStateSchema } from "../../src/coordination/state/jobState";
import type { InvariantName } from "./invariants";
import type { SimWorld, StepRecord } from "./world";
import { SIM_TIMING } from "./world";

/** How far past its budget a step may end: one job's part of a pass (a few requests) and the step's last writes. */
export const STEP_OVERRUN_LIMIT_MS = 1000;
/** Most bytes of stored documents one refresh of the status page may read (issue 21: 1 MiB). */
export const STATUS_READ_LIMIT_BYTES = 1024 * 1024;

/** Issue 21's invariants, by name (their checks are in {@link ActivityChecks}). */
export const ACTIVITY_INVARIANTS = {
  stepDownStopsSomeone:
    "every step-down request that was accepted (an epoch returned: HTTP 202) is followed by a step ended with reason revoked (unless the lease container, and the request with it, was deleted)",
  stepWithinBudget: `a step ends within its budget plus ${STEP_OVERRUN_LIMIT_MS} ms, unless its process was frozen or its storage impaired (outage, hang, slow) meanwhile`,
  statusShowsStoredState:
    "each job a status refresh lists shows a status and counts the job's stored state had during the refresh",
  statusReadsBounded: `a status refresh reads at most ${STATUS_READ_LIMIT_BYTES} bytes of stored documents, and no job state document whole`,
} as const;

/** A version of a job's stored state, from when it was written. */
interface JobVersion {
  atMs: number;
  status: string;
  done: number;
  failed: number;
}

/** Checks issue 21's invariants for one run; `fail` reports a violation. */
export class ActivityChecks {
  private readonly checkedSteps = new Set<StepRecord>();
  private statusReadsSeen = 0;
  private readonly versions = new Map<string, JobVersion[]>();
  private readonly versionEtags = new Map<string, string>();

  constructor(
    private readonly world: SimWorld,
    private readonly fail: (invariant: InvariantName, message: string) => void,
  ) {}

  private t(ms: number): string {
    return `${((ms - this.world.startMs) / 1000).toFixed(3)} s`;
  }

  /** Safety, after every step of the run. */
  afterStep(): void {
    this.noteJobVersions();
    this.checkSteps();
    this.checkStatusReads();
  }

  /** Every version of every job's state, as it is written (the simulated account's blobs, read without a request). */
  private noteJobVersions(): void {
    for (const job of this.world.jobs) {
      const etag = this.world.jobEtag(job.id);
      if (etag === undefined || this.versionEtags.get(job.id) === etag) continue;
      this.versionEtags.set(job.id, etag);
      const state = jobStateSchema.safeParse(this.world.jobState(job.id)?.value).data;
      if (state === undefined) continue;
      const versions = this.versions.get(job.id) ?? [];
      versions.push({ atMs: Date.now(), status: state.status, done: state.doneCount, failed: state.failedCount });
      this.versions.set(job.id, versions);
    }
  }

  private checkSteps(): void {
    const { stepBudgetMs } = SIM_TIMING;
    for (const step of this.world.history.steps) {
      if (step.endMs === undefined || this.checkedSteps.has(step)) continue;
      this.checkedSteps.add(step);
      const tookMs = step.endMs - step.startMs;
      if (tookMs <= stepBudgetMs + STEP_OVERRUN_LIMIT_MS) continue;
      const during = (fromMs: number, toMs: number | undefined): boolean =>
        fromMs <= (step.endMs ?? Infinity) && (toMs ?? Infinity) >= step.startMs;
      const frozen = this.world.history.freezes.some((f) => f.process === step.process && during(f.fromMs, f.toMs));
      const impaired = this.world.activityLog.impairments.some(
        (i) => i.process === step.process && during(i.fromMs, i.toMs),
      );
      if (frozen || impaired) continue;
      this.fail(
        "stepWithinBudget",
        `the step of epoch ${step.epoch} (${step.process.name}) ran from ${this.t(step.startMs)} to ${this.t(step.endMs)}: ${tookMs} ms, more than its budget of ${stepBudgetMs} ms + ${STEP_OVERRUN_LIMIT_MS} ms (${this.world.jobs.length} jobs submitted, storage latency ${this.world.storageLatencyMs} ms a request)`,
      );
    }
  }

  private checkStatusReads(): void {
    const { statusReads } = this.world.activityLog;
    for (; this.statusReadsSeen < statusReads.length; this.statusReadsSeen++) {
      const read = statusReads[this.statusReadsSeen];
      if (read === undefined) continue;
      if (read.bytes > STATUS_READ_LIMIT_BYTES || read.jobDocuments > 0)
        this.fail(
          "statusReadsBounded",
          `the status refresh of ${this.t(read.startMs)}–${this.t(read.endMs)} read ${read.bytes} bytes, ${read.jobDocuments} job state document(s) whole, for ${read.shown.length} jobs`,
        );
      for (const shown of read.shown) {
        if (shown.status === "pending") continue;
        // A job waiting for its notBefore is stored running, and shown scheduled.
        const stored = shown.status === "scheduled" ? "running" : shown.status;
        const versions = this.versions.get(shown.id) ?? [];
        const matches = versions.some(
          (version, index) =>
            version.atMs <= read.endMs &&
            (versions[index + 1]?.atMs ?? Infinity) >= read.startMs &&
            version.status === stored &&
            version.done === shown.done &&
            version.failed === shown.failed,
        );
        if (matches || versions.length === 0) continue;
        const during = versions
          .filter((v, i) => v.atMs <= read.endMs && (versions[i + 1]?.atMs ?? Infinity) >= read.startMs)
          .map((v) => `${v.status} ${v.done}/${v.failed}`)
          .join(", ");
        this.fail(
          "statusShowsStoredState",
          `the status refresh of ${this.t(read.startMs)}–${this.t(read.endMs)} showed job ${shown.id} as ${shown.status} with ${shown.done} done and ${shown.failed} failed; its stored state meanwhile: ${during || "none"}`,
        );
      }
    }
  }

  /** Liveness, once the run is over. */
  atEnd(): void {
    const { stepDowns, revokedStops } = this.world.activityLog;
    for (const request of stepDowns) {
      if (request.acceptedEpoch === undefined || request.acceptedMs === undefined) continue;
      // The request's write (its last one: after a 404 it creates the blob and writes again) landed at:
      const landedMs = this.world.account.writes
        .filter((w) => w.by === request.process.name && w.name.endsWith(".revocation") && w.kind === "write")
        .reduce((latest, w) => Math.max(latest, w.atMs), 0);
      if (revokedStops.some((stop) => stop.atMs >= landedMs)) continue;
      // Deleting the lease container deletes the request with it: nothing is left to honour.
      if (this.world.activityLog.leaseDeletions.some((atMs) => atMs >= landedMs)) continue;
      const stops = revokedStops.map((stop) => `epoch ${stop.epoch} at ${this.t(stop.atMs)}`).join(", ");
      this.fail(
        "stepDownStopsSomeone",
        `${request.process.name}'s step-down request, issued at ${this.t(request.issuedMs)}, was accepted for epoch ${request.acceptedEpoch} (its write landed at ${this.t(landedMs)}, answered at ${this.t(request.acceptedMs)}), and no step ended with reason revoked after it (steps revoked: ${stops || "none"}; terms since: ${this.termsAfter(landedMs)})`,
      );
    }
  }

  private termsAfter(ms: number): string {
    return this.world.history.terms
      .filter((term) => (term.endedMs ?? Infinity) >= ms)
      .map(
        (term) => `${term.epoch} (${this.t(term.beganMs)}–${term.endedMs === undefined ? "" : this.t(term.endedMs)})`,
      )
      .join(", ");
  }
}
