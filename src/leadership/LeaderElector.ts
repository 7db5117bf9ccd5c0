import { LeadershipLostError, StorageError, type LeadershipLostReason } from "../errors";
import type { LeaderRecord } from "../lease/LeaseStore";
import { abortReason, delay, throwIfAborted, withJitter } from "../util/delay";
import { withTimeout } from "../util/timeout";
import { describeLeader, requestStepDown, type LeaderInfo } from "./leaderInfo";
import { resolveElectorOptions, type LeaderElectorOptions, type ResolvedElectorOptions } from "./options";
import { superviseTerm } from "./superviseTerm";
import { emitEvent, Term, type LeadershipTerm } from "./Term";

/** Options for {@link LeaderElector.tryLead} and {@link LeaderElector.lead}. */
export interface LeadOptions {
  /** Shutdown: before a term, stops trying (rejects with the signal's reason); during one, ends it with reason "shutdown". */
  abortSignal?: AbortSignal;
}

/** The leader's work: runs once per term; must stop when `term.signal` fires. */
export type LeaderTask<T> = (term: LeadershipTerm) => Promise<T>;

/** How an attempt to lead ended. Losing the race is a value, not an exception. */
export type LeadResult<T> =
  /** Someone else leads (`leader` says who, when known). */
  | { outcome: "not-acquired"; leader: LeaderRecord | undefined }
  /** This instance led for one term and the task finished while leadership held. */
  | { outcome: "completed"; epoch: number; value: T }
  /** This instance led, but leadership ended before the task did; `error` is what the task threw, if anything. */
  | { outcome: "aborted"; epoch: number; reason: LeadershipLostReason; error: unknown };

/** How long a contender retries an acquire whose outcome it does not know (a timeout), with the same lease id. */
const ACQUIRE_ATTEMPTS = 2;

/**
 * Elects one leader among many instances through a blob lease, runs the leader's task for exactly one term, and
 * fences it: every term has a strictly increasing epoch, and the task's signal fires the moment leadership is in
 * doubt — lease lost, local renew deadline passed, revoked by an operator, stalled, or shut down.
 *
 * @example
 * ```ts
 * const elector = new LeaderElector({ store: new BlobLeaseStore(blobServiceClient), logger });
 * const result = await elector.tryLead(async (term) => runStep({ epoch: term.epoch, abortSignal: term.signal }));
 * if (result.outcome === "not-acquired") logger.info(`leader is ${result.leader?.holder}`);
 * ```
 */
export class LeaderElector {
  private readonly options: ResolvedElectorOptions;
  private lastObserved: { holder: string; epoch: number } | undefined;

  /** @throws ConfigurationError when an option is out of range. */
  constructor(options: LeaderElectorOptions) {
    this.options = resolveElectorOptions(options);
  }

  /** This instance's id. */
  get instanceId(): string {
    return this.options.instanceId;
  }

  /**
   * One attempt to lead, without waiting (for timer-triggered functions, which pay for waiting). Reads the lease
   * first, so a held lease costs one read and no 409. If this instance wins, runs `task` for one term and releases.
   *
   * @throws the task's own error when it fails while leadership holds (the lease is released first);
   *   a `StorageError` when storage cannot be reached; the signal's reason when `abortSignal` fired before a term.
   */
  async tryLead<T>(task: LeaderTask<T>, options: LeadOptions = {}): Promise<LeadResult<T>> {
    const { abortSignal } = options;
    const { store, clock, instanceId, leaseDurationS } = this.options;
    throwIfAborted(abortSignal);
    const snapshot = await this.request((signal) => store.read({ abortSignal: signal }), abortSignal);
    const heldByOther = (snapshot.state === "leased" || snapshot.state === "breaking") && snapshot.record.holder !== instanceId;
    if (heldByOther) {
      this.observe(snapshot.record);
      return { outcome: "not-acquired", leader: snapshot.record };
    }
    const acquireStartMono = clock.monotonicMs();
    if (!(await this.acquire(abortSignal))) {
      this.options.logger.verbose(`Instance ${instanceId} lost the race for ${store.name}.`, { instanceId });
      return { outcome: "not-acquired", leader: undefined };
    }
    const term = await this.beginTerm(acquireStartMono, abortSignal);
    if (term === undefined) return { outcome: "not-acquired", leader: undefined };
    this.options.logger.info(`Instance ${instanceId} leads ${store.name} with epoch ${term.epoch} (lease ${leaseDurationS} s).`, { instanceId, epoch: term.epoch });
    return this.runTerm(term, task, abortSignal);
  }

  /**
   * Waits until this instance leads (polling with jittered retry), runs `task` for one term, and returns how it
   * ended. Storage errors while waiting are logged and retried.
   *
   * @throws the signal's reason when `abortSignal` fires before a term begins; the task's own error as in {@link tryLead}.
   */
  async lead<T>(task: LeaderTask<T>, options: LeadOptions = {}): Promise<Exclude<LeadResult<T>, { outcome: "not-acquired" }>> {
    const { abortSignal } = options;
    const { retryIntervalMs, jitterRatio, random, logger, instanceId } = this.options;
    for (;;) {
      throwIfAborted(abortSignal);
      try {
        const result = await this.tryLead(task, { abortSignal });
        if (result.outcome !== "not-acquired") return result;
      } catch (error) {
        if (abortSignal?.aborted) throw abortReason(abortSignal);
        if (!(error instanceof StorageError)) throw error;
        logger.warn(`Instance ${instanceId} could not reach the lease store; retrying: ${error.message}`, { instanceId });
      }
      await delay(withJitter(retryIntervalMs, jitterRatio, random), { abortSignal });
    }
  }

  /** Who leads, since when, with which epoch, and how many terms there have been. */
  describeLeader(options: LeadOptions = {}): Promise<LeaderInfo> {
    return describeLeader(this.options.store, options);
  }

  /** Asks the current leader to step down at its next renewal; returns the revoked epoch (undefined if nobody leads). */
  requestStepDown(options: LeadOptions = {}): Promise<number | undefined> {
    return requestStepDown(this.options.store, options);
  }

  /** Acquires with the stable lease id, retrying once when the outcome is unknown (a retry then cannot orphan the lease). */
  private async acquire(abortSignal: AbortSignal | undefined): Promise<boolean> {
    const { store, leaseId, leaseDurationS, logger, instanceId } = this.options;
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.request((signal) => store.acquire(leaseId, leaseDurationS, { abortSignal: signal }), abortSignal);
        return result.acquired;
      } catch (error) {
        if (abortSignal?.aborted || !(error instanceof StorageError) || attempt >= ACQUIRE_ATTEMPTS) throw error;
        logger.warn(`Acquire of ${store.name} by ${instanceId} had an unknown outcome; retrying with the same lease id: ${error.message}`, { instanceId });
      }
    }
  }

  /** Reads the record under the lease and writes the next epoch. Returns undefined if the lease was lost meanwhile. */
  private async beginTerm(acquireStartMono: number, abortSignal: AbortSignal | undefined): Promise<Term | undefined> {
    const { store, leaseId, clock, instanceId } = this.options;
    try {
      // Read again now that we hold the lease: only the holder can write the record, so it cannot change under us.
      const { record: previous } = await this.request((signal) => store.read({ abortSignal: signal }), abortSignal);
      const epoch = previous.epoch + 1;
      const record: LeaderRecord = { holder: instanceId, epoch, sinceMs: clock.wallMs(), transitions: previous.transitions + 1 };
      await this.request((signal) => store.writeRecord(leaseId, record, { abortSignal: signal }), abortSignal);
      const term = new Term(epoch, acquireStartMono, this.options);
      this.lastObserved = { holder: instanceId, epoch };
      term.emit({ type: "lease-acquired", instanceId, epoch, previousHolder: previous.holder, transitions: record.transitions, atMs: record.sinceMs });
      return term;
    } catch (error) {
      await this.releaseQuietly();
      if (error instanceof LeadershipLostError) return undefined;
      throw error;
    }
  }

  /** Runs the task under supervision; the one `finally` stops renewing, waits for any renewal in flight, and releases. */
  private async runTerm<T>(term: Term, task: LeaderTask<T>, abortSignal: AbortSignal | undefined): Promise<LeadResult<T>> {
    const { epoch } = term;
    const stop = new AbortController();
    const supervision = superviseTerm(term, this.options.leaseId, this.options, stop.signal);
    const onShutdown = (): void => {
      term.end("shutdown", "the caller's abort signal fired");
    };
    if (abortSignal?.aborted) onShutdown();
    abortSignal?.addEventListener("abort", onShutdown, { once: true });
    try {
      const value = await task(term);
      const reason = term.endReason;
      return reason === undefined ? { outcome: "completed", epoch, value } : { outcome: "aborted", epoch, reason, error: undefined };
    } catch (error) {
      const reason = term.endReason;
      if (reason === undefined) throw error;
      return { outcome: "aborted", epoch, reason, error };
    } finally {
      abortSignal?.removeEventListener("abort", onShutdown);
      stop.abort();
      await supervision;
      // A lease storage says is no longer ours needs no release; in every other case give it back now.
      if (term.endReason !== "lost") await this.releaseQuietly(term);
    }
  }

  /** Releases, logging instead of throwing: the lease expires by itself if storage cannot be reached. */
  private async releaseQuietly(term?: Term): Promise<void> {
    const { store, leaseId, logger, instanceId, clock } = this.options;
    try {
      await this.request((signal) => store.release(leaseId, { abortSignal: signal }), undefined);
      if (term) {
        logger.info(`Leader ${instanceId} released ${store.name} (epoch ${term.epoch}).`, { instanceId, epoch: term.epoch });
        term.emit({ type: "lease-released", instanceId, epoch: term.epoch, heldMs: term.heldMs(), atMs: clock.wallMs() });
      }
    } catch (error) {
      logger.warn(`Instance ${instanceId} could not release ${store.name}; it will expire by itself: ${error instanceof Error ? error.message : String(error)}`, { instanceId });
    }
  }

  /** Runs one storage request under the request timeout and the caller's signal. */
  private request<T>(operation: (signal: AbortSignal) => Promise<T>, abortSignal: AbortSignal | undefined): Promise<T> {
    return withTimeout(this.options.requestTimeoutMs, operation, { abortSignal });
  }

  /** Emits `leader-observed` when the leader seen by this contender changes. */
  private observe(record: LeaderRecord): void {
    const { instanceId, clock } = this.options;
    if (this.lastObserved?.holder === record.holder && this.lastObserved.epoch === record.epoch) return;
    this.lastObserved = { holder: record.holder, epoch: record.epoch };
    emitEvent(this.options, { type: "leader-observed", instanceId, leader: record.holder, epoch: record.epoch, atMs: clock.wallMs() });
  }
}
