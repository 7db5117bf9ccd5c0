import { Bitmap } from "../../src/coordination/state/bitmap";
import { jobStateSchema, type JobState } from "../../src/coordination/state/jobState";
import { StorageError } from "../../src/library/errors";
import { ACTIVITY_INVARIANTS, ActivityChecks } from "./activityInvariants";
import { CHUNK_INVARIANTS, ChunkChecks } from "./chunkWorld";
import { GARBAGE_INVARIANTS, GarbageChecks } from "./garbageInvariants";
import { LIFECYCLE_INVARIANTS, LifecycleChecks } from "./lifecycleInvariants";
import { plannedJobCount } from "./activityWorld";
import { simPartial, simRegistry } from "./kinds";
import { SIM_TIMING, type SimWorld, type StepRecord, type SubmittedJob } from "./world";

/** Longest a poison message may be hidden by a receive (the leader's own hold while it folds one is 30 s). */
const POISON_HIDE_LIMIT_S = 300;

/**
 * The simulator's invariants, by name. Safety ones are checked after every step of the run (each request landing,
 * each timer firing); liveness ones once the faults have stopped and the run has had time to recover.
 */
export const INVARIANTS = {
  twoTermsOverlap:
    "never two leaders' steps at once, except a stale leader whose process was frozen (its clock stopped) or whose lease an operator broke or deleted meanwhile",
  epochsNeverDecrease: "every term's epoch is above every earlier term's",
  staleWriteNeverAfterNewer: "no state write of an older epoch lands on a document after a newer epoch wrote it",
  noItemCountedTwice:
    "job state is consistent: done and failed bitmaps disjoint and matching their counts, the aggregate exactly the merge of the done items, and an ended job's status and counts final",
  userInputUnchanged: "no user blob in the input container is changed or deleted",
  everyJobEnds: `once faults stop, every job ends within ${SIM_TIMING.calmLimitMs / 1000} s`,
  leaderHoldsWithinLeasePlusTick: "once faults stop, someone leads again within a lease duration plus a tick",
  stepEndsWithoutError:
    "a tick ends as completed, not-acquired or aborted by leadership, never with an unexpected error",
  poisonNeverHiddenLong: `no message in a poison queue is made invisible for more than ${POISON_HIDE_LIMIT_S} s (an operator peeking must see it)`,
  takeoverOnlyOfStoppedHolder:
    "a takeover's break lands only after the term it ends has stopped by its own takeover deadline (on its own clock) and a task still running was told (its signal fired), unless its process was frozen or crashed (test/sim/takeover.ts)",
  ...ACTIVITY_INVARIANTS,
  ...LIFECYCLE_INVARIANTS,
  ...CHUNK_INVARIANTS,
  ...GARBAGE_INVARIANTS,
  limitsNeverExceeded:
    "no pool of a limit (a kind's, a key's, a job's own) ever has more items running than its concurrency, nor more starts in any window of its period (sliding) than its rate's limit, nor more than its burst in any window of period ÷ ⌊limit ÷ burst⌋ (test/sim/limitsWorld.ts)",
  limitedJobsEnd:
    "once faults stop, every job under limits ends within 180 s + twice a grant's lifetime and grace (11 min each: a grant whose unit never went out, a unit whose copy could not claim its grant, held) + the same per lost delivery of each item that kills its process (at most MAX_LOST_DELIVERIES each) and per worker's result damaged on its way + its items' time at their limits",
} as const;
export type InvariantName = keyof typeof INVARIANTS;
export const INVARIANT_NAMES = Object.keys(INVARIANTS) as InvariantName[];

/** What broke, when (ms since the run started) and the evidence. */
export interface Violation {
  invariant: InvariantName;
  atMs: number;
  message: string;
}

/** Job statuses that are an end. */
const ENDED = new Set(["completed", "failed", "cancelled", "expired"]);

/** Slack for jittered ticks and request times in the leadership liveness bound. */
const LEADERSHIP_SLACK_MS = 3000;

/** Checks the invariants of one run incrementally; `violations` holds what failed. */
export class InvariantChecker {
  readonly violations: Violation[] = [];
  private writesSeen = 0;
  private stepsSeen = 0;
  private termsSeen = 0;
  private tickErrorsSeen = 0;
  private maxTermEpoch = 0;
  private readonly maxEpochByKey = new Map<string, number>();
  private readonly jobEtags = new Map<string, string>();
  private readonly endedJobs = new Map<string, JobState>();
  /** When each job was first seen ended (its state's write), on the simulated clock. */
  private readonly jobEnds = new Map<string, number>();
  private readonly registry = simRegistry();
  private readonly activity: ActivityChecks;
  private readonly lifecycle: LifecycleChecks;
  private readonly chunks: ChunkChecks;
  private readonly garbage: GarbageChecks;

  constructor(
    private readonly world: SimWorld,
    private readonly enabled: ReadonlySet<InvariantName>,
  ) {
    this.activity = new ActivityChecks(world, (invariant, message) => {
      this.fail(invariant, message);
    });
    this.lifecycle = new LifecycleChecks(world, (invariant, message) => {
      this.fail(invariant, message);
    });
    this.chunks = new ChunkChecks(world, world.chunks, (invariant, message) => {
      this.fail(invariant, message);
    });
    this.garbage = new GarbageChecks(world, world.garbage, (invariant, message) => {
      this.fail(invariant, message);
    });
  }

  private fail(invariant: InvariantName, message: string): void {
    if (this.enabled.has(invariant))
      this.violations.push({ invariant, atMs: Date.now() - this.world.startMs, message });
  }

  private t(ms: number): string {
    return `${((ms - this.world.startMs) / 1000).toFixed(3)} s`;
  }

  /** Safety: checks what happened since the last call. */
  afterStep(): void {
    const { history, account } = this.world;
    for (; this.stepsSeen < history.steps.length; this.stepsSeen++) {
      const step = history.steps[this.stepsSeen];
      if (step !== undefined) this.checkOverlap(step);
    }
    for (; this.termsSeen < history.terms.length; this.termsSeen++) {
      const term = history.terms[this.termsSeen];
      if (term === undefined) continue;
      if (term.epoch <= this.maxTermEpoch)
        this.fail(
          "epochsNeverDecrease",
          `term of epoch ${term.epoch} (${term.process.name}) began at ${this.t(term.beganMs)} after a term of epoch ${this.maxTermEpoch}`,
        );
      this.maxTermEpoch = Math.max(this.maxTermEpoch, term.epoch);
    }
    let stateWritten = false;
    for (; this.writesSeen < account.writes.length; this.writesSeen++) {
      const write = account.writes[this.writesSeen];
      if (write === undefined) continue;
      if (write.container === this.world.stateContainer) stateWritten = true;
      if (write.container === this.world.stateContainer && write.epoch !== undefined) {
        const newest = this.maxEpochByKey.get(write.name) ?? 0;
        if (write.epoch < newest)
          this.fail(
            "staleWriteNeverAfterNewer",
            `${write.by} wrote ${write.name} with epoch ${write.epoch} at ${this.t(write.atMs)}, after epoch ${newest} had written it`,
          );
        this.maxEpochByKey.set(write.name, Math.max(newest, write.epoch));
      }
      if (
        write.container === this.world.inputContainer &&
        this.world.userBlobs.has(write.name) &&
        write.by !== "client" &&
        write.by !== "user"
      ) {
        this.fail(
          "userInputUnchanged",
          `${write.by} ${write.kind === "delete" ? "deleted" : "overwrote"} the user's blob ${write.container}/${write.name} at ${this.t(write.atMs)}`,
        );
      }
    }
    for (; this.tickErrorsSeen < history.tickErrors.length; this.tickErrorsSeen++) {
      const failure = history.tickErrors[this.tickErrorsSeen];
      if (failure === undefined) continue;
      const { error } = failure;
      // Storage that cannot be reached (an injected outage) fails a tick legitimately; nothing else may.
      if (error instanceof StorageError && (error.code === "StorageUnavailable" || error.code === "Timeout")) continue;
      const what = error instanceof Error ? `${error.name}: ${error.message.slice(0, 300)}` : String(error);
      this.fail(
        "stepEndsWithoutError",
        `tick of ${failure.process}${failure.epoch === undefined ? "" : ` (epoch ${failure.epoch})`} failed at ${this.t(failure.atMs)}: ${what}`,
      );
    }
    if (stateWritten) for (const job of this.world.jobs) this.checkJob(job);
    for (const problem of this.world.takeover.check((ms) => this.t(ms)))
      this.fail("takeoverOnlyOfStoppedHolder", problem);
    this.checkPoisonVisibility();
    this.activity.afterStep();
    this.lifecycle.afterStep();
    this.chunks.afterStep();
    this.garbage.afterStep();
    for (const problem of this.world.limits.problems.splice(0)) this.fail("limitsNeverExceeded", problem);
  }

  private readonly hiddenPoison = new Set<string>();

  private checkPoisonVisibility(): void {
    const now = Date.now();
    for (const [name, queue] of this.world.account.queues) {
      if (!name.endsWith("-poison")) continue;
      for (const message of queue.messages) {
        const hiddenS = (message.visibleAtMs - now) / 1000;
        if (hiddenS <= POISON_HIDE_LIMIT_S || this.hiddenPoison.has(message.id)) continue;
        this.hiddenPoison.add(message.id);
        this.fail(
          "poisonNeverHiddenLong",
          `${message.id} in ${name} was made invisible for ${hiddenS.toFixed(0)} s at ${this.t(now)} (dequeued ${message.dequeueCount} times)`,
        );
      }
    }
  }

  private checkOverlap(step: StepRecord): void {
    for (const other of this.world.history.steps) {
      if (other === step || other.endMs !== undefined) continue;
      if (other.epoch === step.epoch) {
        this.fail(
          "twoTermsOverlap",
          `two steps with epoch ${step.epoch} (${other.process.name}, ${step.process.name}) at ${this.t(step.startMs)}`,
        );
        continue;
      }
      const [older, newer] = other.epoch < step.epoch ? [other, step] : [step, other];
      const { freezes, leaseInterventions } = this.world.history;
      const frozen = freezes.some(
        (f) => f.process === older.process && f.fromMs <= newer.startMs && (f.toMs ?? Infinity) >= older.startMs,
      );
      // An operator who breaks the lease or deletes it takes it from the holder, who learns at its next renewal.
      const takenAway = leaseInterventions.some((atMs) => atMs >= older.startMs - 5000 && atMs <= newer.startMs);
      if (!frozen && !takenAway) {
        this.fail(
          "twoTermsOverlap",
          `the step of epoch ${newer.epoch} (${newer.process.name}) started at ${this.t(newer.startMs)} while the step of epoch ${older.epoch} (${older.process.name}, started ${this.t(older.startMs)}) was still running; ${older.process.name} had not been frozen and nobody had broken or deleted the lease`,
        );
      }
    }
  }

  private checkJob(job: SubmittedJob): void {
    const etag = this.world.jobEtag(job.id);
    if (etag === undefined || this.jobEtags.get(job.id) === etag) return;
    const stored = this.world.jobState(job.id);
    if (stored === undefined) return;
    this.jobEtags.set(job.id, stored.etag);
    const parsed = jobStateSchema.safeParse(stored.value);
    if (!parsed.success) {
      this.fail(
        "noItemCountedTwice",
        `job ${job.id}: stored state is not a job state: ${parsed.error.message.slice(0, 200)}`,
      );
      return;
    }
    const state = parsed.data;
    this.world.limits.onJobState(job, state);
    if (state.status !== "running" && !this.jobEnds.has(job.id)) this.jobEnds.set(job.id, Date.now());
    // An ended job takes no more: its status and counts are final (late results of a cancelled job are not counted).
    const ended = this.endedJobs.get(job.id);
    if (
      ended !== undefined &&
      (state.status !== ended.status || state.doneCount !== ended.doneCount || state.failedCount !== ended.failedCount)
    ) {
      this.fail(
        "noItemCountedTwice",
        `job ${job.id} ended as ${ended.status} (${ended.doneCount} done, ${ended.failedCount} failed) but later became ${state.status} (${state.doneCount} done, ${state.failedCount} failed)`,
      );
    }
    if (ended === undefined && ENDED.has(state.status)) this.endedJobs.set(job.id, state);
    const problem = this.jobProblem(job, state);
    if (problem !== undefined)
      this.fail(
        "noItemCountedTwice",
        `job ${job.id} (${state.kind}, ${state.itemCount} items, epoch ${state.lastEpoch}): ${problem}`,
      );
  }

  private jobProblem(job: SubmittedJob, state: JobState): string | undefined {
    const done = Bitmap.fromBase64(state.doneBits, state.itemCount);
    const failed = Bitmap.fromBase64(state.failedBits, state.itemCount);
    let doneBits = 0;
    let failedBits = 0;
    const kind = this.registry.get(state.kind);
    if (kind === undefined) return `unknown kind ${state.kind}`;
    let expected = kind.empty();
    for (let item = 0; item < state.itemCount; item++) {
      const isDone = done.has(item);
      if (isDone && failed.has(item)) return `item ${item} is both done and failed`;
      if (failed.has(item)) failedBits++;
      if (!isDone) continue;
      doneBits++;
      const input = job.inputs[item];
      if (input === undefined) return `item ${item} is done but its input blob does not exist`;
      try {
        expected = kind.merge(expected, simPartial(state.kind, input, job.params));
      } catch (error) {
        return `item ${item} is done but its input cannot be processed (${error instanceof Error ? error.message : String(error)})`;
      }
    }
    if (doneBits !== state.doneCount || failedBits !== state.failedCount)
      return `counts done ${state.doneCount} / failed ${state.failedCount}, bitmaps ${doneBits} / ${failedBits}`;
    // Held items (issue 43) are neither done nor failed, and only a running job holds any.
    if (state.heldBits !== undefined) {
      if (state.status !== "running") return `it ended ${state.status} with items still held`;
      const held = Bitmap.fromBase64(state.heldBits, state.itemCount);
      for (let item = 0; item < state.itemCount; item++)
        if (held.has(item) && (done.has(item) || failed.has(item))) return `item ${item} is held and counted`;
    }
    if (state.doneCount + state.failedCount > state.itemCount) return "more items counted than the job has";
    if (state.doneCount === 0) return undefined;
    const aggregate = kind.parsePartial(state.aggregate);
    if (!aggregate.ok)
      return `aggregate is not valid for ${state.kind}: ${JSON.stringify(state.aggregate).slice(0, 120)}`;
    if (JSON.stringify(aggregate.value) !== JSON.stringify(expected))
      return `aggregate ${JSON.stringify(aggregate.value).slice(0, 200)} is not the merge of the ${state.doneCount} done items ${JSON.stringify(expected).slice(0, 200)}`;
    return undefined;
  }

  /** Liveness, once the run is over (`endMs`: when it stopped). */
  atEnd(endMs: number): void {
    const { world } = this;
    // Jobs under limits have a bound of their own (limitedJobsEnd); the others end within calmLimitMs of the faults.
    const unlimitedBy = world.faultEndMs + SIM_TIMING.calmLimitMs;
    for (const job of world.jobs) {
      const limited = world.limits.limited(job);
      const stored = world.jobState(job.id);
      const state = stored === undefined ? undefined : jobStateSchema.safeParse(stored.value).data;
      const endedMs = this.jobEnds.get(job.id);
      if (state !== undefined && ENDED.has(state.status) && (limited || (endedMs ?? endMs) <= unlimitedBy)) continue;
      const progress =
        state === undefined
          ? "never registered"
          : `${state.status}: ${state.doneCount} done + ${state.failedCount} failed of ${state.itemCount}, ${state.dispatched} dispatched`;
      const late = endedMs === undefined ? "had not ended" : `ended only at ${this.t(endedMs)},`;
      this.fail(
        limited ? "limitedJobsEnd" : "everyJobEnds",
        `job ${job.id} (${job.plan.kind}${limited ? ", limited" : ""}, items ${job.plan.items.map((i) => i.t).join(",")}${job.plan.deleteChunk ? ", chunk 0 deleted" : ""}) ${late} ${(((endedMs ?? endMs) - world.faultEndMs) / 1000).toFixed(0)} s after faults stopped (${progress})`,
      );
    }
    if (plannedJobCount(world) !== world.jobs.length)
      this.fail("everyJobEnds", `only ${world.jobs.length} of ${plannedJobCount(world)} jobs were submitted`);
    this.activity.atEnd();
    this.lifecycle.atEnd();
    const boundMs = SIM_TIMING.leaseDurationS * 1000 + SIM_TIMING.tickMs + LEADERSHIP_SLACK_MS;
    let covered = world.faultEndMs;
    for (const term of [...world.history.terms].sort((a, b) => a.beganMs - b.beganMs)) {
      const end = term.endedMs ?? endMs;
      if (end < world.faultEndMs) continue;
      if (term.beganMs - covered > boundMs) {
        this.fail(
          "leaderHoldsWithinLeasePlusTick",
          `nobody led from ${this.t(covered)} to ${this.t(term.beganMs)} (${((term.beganMs - covered) / 1000).toFixed(1)} s > ${boundMs / 1000} s) after faults stopped`,
        );
      }
      covered = Math.max(covered, end);
    }
    if (endMs - covered > boundMs)
      this.fail(
        "leaderHoldsWithinLeasePlusTick",
        `nobody led from ${this.t(covered)} to the end of the run at ${this.t(endMs)}`,
      );
  }

  /** Whether every planned job has been submitted and has ended. */
  allJobsEnded(): boolean {
    const { world } = this;
    if (world.jobs.length !== plannedJobCount(world)) return false;
    return world.jobs.every((job) => {
      const status: unknown = (world.jobState(job.id)?.value as { status?: unknown } | undefined)?.status;
      return typeof status === "string" && ENDED.has(status);
    });
  }
}
