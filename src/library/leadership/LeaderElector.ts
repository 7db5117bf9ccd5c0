import { randomUUID } from "node:crypto";
import { StorageError } from "../errors.js";
import { assertSupportedNode } from "../nodeVersion.js";
import type { LeaderRecord } from "../lease/LeaseStore.js";
import { abortReason, delay, throwIfAborted, withJitter, type Abortable } from "../util/delay.js";
import type { Logger } from "../util/logger.js";
import type { LeadershipEvent } from "./events.js";
import { withTimeout } from "../util/timeout.js";
import { describeLeader, requestStepDown, type LeaderInfo } from "./leaderInfo.js";
import { resolveElectorOptions, type LeaderElectorOptions, type ResolvedElectorOptions } from "./options.js";
import { runTerm, type LeadResult, type LeaderTask } from "./runTerm.js";
import { breakIfSilent, SilenceWatch } from "./takeover.js";
import { emitEvent, Term, type PreviousEnd } from "./Term.js";

export type { LeadResult, LeaderTask } from "./runTerm.js";

/**
 * Options for {@link LeaderElector.tryLead} and {@link LeaderElector.lead}. `abortSignal` is shutdown: before a term it
 * stops trying (rejects with the signal's reason); during one it ends the term with reason "shutdown".
 */
export interface LeadOptions extends Abortable {
  /**
   * Where this call's attempt and term log, instead of the elector's `logger` (e.g. the logger of the one function
   * invocation that called, when one elector serves a whole process). @default the elector's `logger`
   */
  logger?: Logger;
  /** Receives this call's leadership events, instead of the elector's `onEvent`. @default the elector's `onEvent` */
  onEvent?: (event: LeadershipEvent) => void;
}

/** What {@link LeaderElector.watchLeader} saw, and did. */
export type LeaderWatch =
  /**
   * Someone holds the lease. `breakInMs`: how long until this contender may break it if the holder stays silent (0 once
   * it may); undefined when it never may (the holder does not heartbeat, or takeover is off here).
   */
  | { outcome: "held"; leader: LeaderRecord; breakInMs: number | undefined }
  /** This call broke the lease of a holder that had stopped by its own takeover deadline: anyone may acquire it now. */
  | { outcome: "broken"; leader: LeaderRecord }
  /** Nobody holds the lease: an attempt now would acquire it. */
  | { outcome: "free" }
  /** This elector has an attempt or a term in progress: nothing was read. */
  | { outcome: "busy" };

/**
 * How many times one attempt sends its acquire (a count, not a time) when the outcome is unknown (a timeout), with the
 * same lease id.
 */
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
  /** With takeover: how long the holder's record has been seen unchanged. */
  private readonly silence: SilenceWatch;
  /** The attempt or term in progress (its term once the lease is acquired): an elector never runs two at once. */
  private current: { term: Term | undefined } | undefined;

  /** @throws ConfigurationError when an option is out of range. */
  constructor(options: LeaderElectorOptions) {
    this.options = resolveElectorOptions(options);
    this.silence = new SilenceWatch(this.options);
  }

  /** This instance's id. */
  get instanceId(): string {
    return this.options.instanceId;
  }

  /**
   * Whether this elector has an attempt or a term in progress: a {@link LeaderElector.tryLead} now would return
   * "not-acquired" at once, without a lease request. Callers that merely want a step to happen soon (wake-ups) can skip
   * theirs.
   */
  get busy(): boolean {
    return this.current !== undefined;
  }

  /**
   * One attempt to lead, without waiting (for timer-triggered functions, which pay for waiting). Reads the lease
   * first, so a held lease costs one read and no 409. If this instance wins, runs `task` for one term and releases.
   * While this elector already has an attempt or a term in progress, returns "not-acquired" at once (with the
   * running term's record) instead of starting a second term.
   *
   * @throws the task's own error when it fails while leadership holds (the lease is released first);
   *   a `StorageError` when storage cannot be reached (a lease that may have been acquired is released first);
   *   the signal's reason when `abortSignal` fired before a term; a `ConfigurationError` on a Node.js older than 22.12.
   */
  async tryLead<T>(task: LeaderTask<T>, options: LeadOptions = {}): Promise<LeadResult<T>> {
    // Here, not in the constructor: a client that only submits or reads jobs builds an elector and never leads.
    assertSupportedNode();
    const { abortSignal } = options;
    throwIfAborted(abortSignal);
    const callOptions = this.forCall(options);
    if (this.current !== undefined) {
      const { logger, instanceId } = callOptions;
      logger.verbose(`Instance ${instanceId} already has an attempt or a term in progress; not starting another.`, {
        instanceId,
      });
      return { outcome: "not-acquired", leader: this.current.term?.record };
    }
    const current: { term: Term | undefined } = { term: undefined };
    this.current = current;
    try {
      return await this.attempt(task, current, callOptions, abortSignal);
    } finally {
      this.current = undefined;
    }
  }

  /**
   * Waits until this instance leads (polling with jittered retry), runs `task` for one term, and returns how it
   * ended. Storage errors while waiting are logged and retried.
   *
   * @throws the signal's reason when `abortSignal` fires before a term begins; the task's own error as in
   *   {@link LeaderElector.tryLead}.
   */
  async lead<T>(
    task: LeaderTask<T>,
    options: LeadOptions = {},
  ): Promise<Exclude<LeadResult<T>, { outcome: "not-acquired" }>> {
    const { abortSignal } = options;
    const { retryIntervalMs, jitterRatio, random, logger, instanceId } = this.forCall(options);
    for (;;) {
      throwIfAborted(abortSignal);
      try {
        const result = await this.tryLead(task, options);
        if (result.outcome !== "not-acquired") return result;
      } catch (error) {
        if (abortSignal?.aborted) throw abortReason(abortSignal);
        if (!(error instanceof StorageError)) throw error;
        logger.warn(`Instance ${instanceId} could not reach the lease store; retrying: ${error.message}`, {
          instanceId,
        });
      }
      // With takeover, the next attempt comes when a silent holder may be broken, if that is sooner.
      const retryMs = withJitter(retryIntervalMs, jitterRatio, random);
      await delay(Math.min(retryMs, this.silence.msUntilBreak() ?? retryMs), { abortSignal });
    }
  }

  /**
   * One read of the lease for a watcher (an instance that is busy anyway and wants a dead leader replaced soon): it
   * counts towards knowing that the holder has stopped, exactly as {@link LeaderElector.tryLead}'s reads do, and when
   * this contender knows it, breaks the holder's lease (conditional on the record it counted: a heartbeat that landed
   * meanwhile makes the break fail). Never acquires and never runs a term, so it may run beside a `tryLead`; while this
   * elector has an attempt or a term in progress it reads nothing ("busy").
   *
   * @throws a `StorageError` when storage cannot be reached; the signal's reason when `abortSignal` fired.
   */
  async watchLeader(options: LeadOptions = {}): Promise<LeaderWatch> {
    const { abortSignal } = options;
    throwIfAborted(abortSignal);
    if (this.current !== undefined) return { outcome: "busy" };
    const callOptions = this.forCall(options);
    const snapshot = await this.request((signal) => this.options.store.read({ abortSignal: signal }), abortSignal);
    this.silence.observe(snapshot, this.options.clock.monotonicMs());
    const { state, record } = snapshot;
    if (state !== "leased" && state !== "breaking") return { outcome: "free" };
    this.observe(record, callOptions);
    const send = <T>(operation: (signal: AbortSignal) => Promise<T>): Promise<T> =>
      this.request(operation, abortSignal);
    const broke = await breakIfSilent(this.silence, snapshot, callOptions, send);
    if (broke === "broken") return { outcome: "broken", leader: record };
    if (broke === "released") return { outcome: "free" };
    return { outcome: "held", leader: record, breakInMs: this.silence.msUntilBreak() };
  }

  /** Who leads, since when, with which epoch, and how many terms there have been. */
  describeLeader(options: LeadOptions = {}): Promise<LeaderInfo> {
    return describeLeader(this.options.store, options);
  }

  /**
   * Asks the current leader to step down at its next renewal; returns the revoked epoch (undefined if nobody leads).
   */
  requestStepDown(options: LeadOptions = {}): Promise<number | undefined> {
    return requestStepDown(this.options.store, options);
  }

  /** The elector's options with one call's logger and event listener, when it gives them. */
  private forCall(options: LeadOptions): ResolvedElectorOptions {
    const { logger, onEvent } = options;
    if (logger === undefined && onEvent === undefined) return this.options;
    return { ...this.options, logger: logger ?? this.options.logger, onEvent: onEvent ?? this.options.onEvent };
  }

  /** One attempt: read, acquire with a fresh lease id, then run one term. */
  private async attempt<T>(
    task: LeaderTask<T>,
    current: { term: Term | undefined },
    options: ResolvedElectorOptions,
    abortSignal: AbortSignal | undefined,
  ): Promise<LeadResult<T>> {
    const { store, clock, instanceId, logger } = options;
    const snapshot = await this.request((signal) => store.read({ abortSignal: signal }), abortSignal);
    this.silence.observe(snapshot, clock.monotonicMs());
    // A lease that expired or was broken was not given back: its term may have stopped anywhere (term.previousEnd). A
    // takeover's mark says so too: a broken lease reads as available once the mark was written (Azurite, at least).
    let previousEnd: PreviousEnd =
      snapshot.state === "expired" || snapshot.state === "broken" || snapshot.record.brokenBy !== undefined
        ? "lapsed"
        : "released";
    if (snapshot.state === "leased" || snapshot.state === "breaking") {
      this.observe(snapshot.record, options);
      // With takeover: a holder this contender knows has stopped is broken, and the lease acquired below.
      const send = <R>(operation: (signal: AbortSignal) => Promise<R>): Promise<R> =>
        this.request(operation, abortSignal);
      const broke = await breakIfSilent(this.silence, snapshot, options, send);
      if (broke === false) return { outcome: "not-acquired", leader: snapshot.record };
      // A lease given back since the read was not broken: the term after it follows a release.
      if (broke === "broken") previousEnd = "lapsed";
    }
    // A fresh id per attempt, never reused: a release by one term or attempt can never free a lease another holds, not
    // even a release whose answer was lost and that lands late (so an orphaned lease is not adopted: it expires).
    const leaseId = randomUUID();
    const acquireStartMono = clock.monotonicMs();
    let acquired: boolean;
    try {
      acquired = await this.acquire(leaseId, options, abortSignal);
    } catch (error) {
      // The acquire may have landed: give it back now rather than leave it held with no record for a lease duration.
      await this.giveBack(leaseId, options);
      throw error;
    }
    if (!acquired) {
      logger.verbose(`Instance ${instanceId} lost the race for ${store.name}.`, { instanceId });
      return { outcome: "not-acquired", leader: undefined };
    }
    const term = new Term(acquireStartMono, options, previousEnd);
    current.term = term;
    try {
      return await runTerm(term, leaseId, task, options, abortSignal);
    } finally {
      // This instance led: the leader it sees next is a change only when it is another holder or epoch.
      if (term.record !== undefined) this.lastObserved = { holder: instanceId, epoch: term.record.epoch };
      // A lease storage says is no longer ours needs no release; in every other case give it back now.
      if (term.endReason !== "lost") await this.giveBack(leaseId, options, term);
    }
  }

  /**
   * Acquires with the attempt's lease id, sending it again once when the outcome is unknown (idempotent with the same
   * id).
   */
  private async acquire(
    leaseId: string,
    options: ResolvedElectorOptions,
    abortSignal: AbortSignal | undefined,
  ): Promise<boolean> {
    const { store, leaseDurationS, logger, instanceId } = options;
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.request(
          (signal) => store.acquire(leaseId, leaseDurationS, { abortSignal: signal }),
          abortSignal,
        );
        return result.acquired;
      } catch (error) {
        if (abortSignal?.aborted || !(error instanceof StorageError) || attempt >= ACQUIRE_ATTEMPTS) throw error;
        logger.warn(
          `Acquire of ${store.name} by ${instanceId} had an unknown outcome; retrying with the same lease id: ${error.message}`,
          { instanceId },
        );
      }
    }
  }

  /**
   * Releases `leaseId` (and nothing else), logging instead of throwing: if storage cannot be reached, or an aborted
   * acquire lands after the release, the lease expires by itself (at most one lease duration without a leader). The
   * id is never proposed again, so a release that lands late frees nothing another term holds.
   */
  private async giveBack(leaseId: string, options: ResolvedElectorOptions, term?: Term): Promise<void> {
    const { store, logger, instanceId, clock } = options;
    try {
      // Not under the caller's signal: a shutdown is exactly when the lease must be given back.
      await this.request((signal) => store.release(leaseId, { abortSignal: signal }), undefined);
      if (term?.hasBegun) {
        logger.info(`Leader ${instanceId} released ${store.name} (epoch ${term.epoch}).`, {
          instanceId,
          epoch: term.epoch,
        });
        term.emit({
          type: "lease-released",
          instanceId,
          epoch: term.epoch,
          heldMs: term.heldMs(),
          atMs: clock.wallMs(),
        });
      }
    } catch (error) {
      logger.warn(
        `Instance ${instanceId} could not release ${store.name}; the lease expires by itself: ${error instanceof Error ? error.message : String(error)}`,
        { instanceId },
      );
    }
  }

  /** Runs one storage request under the request timeout and the caller's signal. */
  private request<T>(operation: (signal: AbortSignal) => Promise<T>, abortSignal: AbortSignal | undefined): Promise<T> {
    return withTimeout(this.options.requestTimeoutMs, operation, { abortSignal });
  }

  /** Emits `leader-observed` when the leader seen by this contender changes. */
  private observe(record: LeaderRecord, options: ResolvedElectorOptions): void {
    const { instanceId, clock } = options;
    if (this.lastObserved?.holder === record.holder && this.lastObserved.epoch === record.epoch) return;
    this.lastObserved = { holder: record.holder, epoch: record.epoch };
    emitEvent(options, {
      type: "leader-observed",
      instanceId,
      leader: record.holder,
      epoch: record.epoch,
      atMs: clock.wallMs(),
    });
  }
}
