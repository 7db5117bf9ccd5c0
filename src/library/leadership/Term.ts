import { setMaxListeners } from "node:events";
import { LeadershipLostError, type LeadershipLostReason } from "../errors.js";
import type { LeaderRecord } from "../lease/LeaseStore.js";
import type { LeadershipEvent, PreviousEnd } from "./events.js";
import type { ResolvedElectorOptions } from "./options.js";

/**
 * What a leader's task sees of its term: its epoch (the fencing token), an `AbortSignal` that fires the moment
 * leadership is in doubt, and a watchdog to feed.
 */
export interface LeadershipTerm {
  /** This instance's id. */
  readonly instanceId: string;
  /** The term's epoch: strictly greater than every earlier term's. Pass it to fenced writes. */
  readonly epoch: number;
  /** Fires when leadership ends; its `reason` is a {@link LeadershipLostError} that says why. */
  readonly signal: AbortSignal;
  /** Wall-clock ms when the term began. */
  readonly startedAtMs: number;
  /**
   * How the term before this one ended, as the lease showed it when this term took it: `"released"` when its holder
   * gave the lease back (or there was none), so it stopped where it chose to; `"lapsed"` when the lease had expired or
   * was broken (a crash, a freeze, a takeover, an operator's break), so it may have stopped anywhere in its task, and
   * work its process had taken on (messages it received, say) may be held up until they time out.
   */
  readonly previousEnd: PreviousEnd;
  /**
   * True while the term is live: not aborted, and neither the local renew deadline nor (with takeover) the takeover
   * deadline passed — checked on the clock, now.
   */
  isLeader(): boolean;
  /**
   * Checks that this term still leads: call it before each side effect.
   *
   * @throws LeadershipLostError unless {@link LeadershipTerm.isLeader}.
   */
  assertLeader(): void;
  /** Feeds the watchdog: the task is making progress. */
  reportProgress(): void;
}

export type { PreviousEnd } from "./events.js";

/**
 * The term's internal state; the task only sees {@link LeadershipTerm}. It exists from the moment the lease is
 * acquired — renewals and the renew deadline run from the acquire's start — and {@link begin}s once its record (and
 * so its epoch) is written. Until then `epoch` is 0 and no events are reported.
 */
export class Term implements LeadershipTerm {
  readonly instanceId: string;
  private readonly controller = new AbortController();
  private deadlineMono: number;
  /** With takeover: when the term stops unless a heartbeat succeeds (set once its record is written). */
  private takeoverDeadlineMono: number | undefined;
  private readonly heartbeats = Promise.withResolvers<LeaderRecord>();
  private armedAtMono = 0;
  private lastProgressMono: number;
  private startedMono: number;
  private begun: { record: LeaderRecord; previousEpoch: number; previousEnd: PreviousEnd } | undefined;

  constructor(
    /** Monotonic time at which the acquire request that began this term was sent. */
    readonly acquireStartMono: number,
    private readonly options: ResolvedElectorOptions,
    /** How the previous term ended as the lease state showed before the acquire; {@link begin} may add to it. */
    private readonly leaseShowed: PreviousEnd = "released",
  ) {
    const { clock } = options;
    this.instanceId = options.instanceId;
    this.startedMono = clock.monotonicMs();
    this.deadlineMono = acquireStartMono + options.renewDeadlineMs;
    this.lastProgressMono = this.startedMono;
    // The task passes this signal to many concurrent storage calls, each of which listens on it.
    setMaxListeners(1000, this.controller.signal);
  }

  /**
   * Starts the term proper, once `record` (and so its epoch) is written; `previousEpoch` is the epoch that record
   * replaced. `brokenBefore`: the record replaced carried a takeover's mark (a lease broken and then written to may
   * read as available again, so the lease state alone does not tell).
   */
  begin(record: LeaderRecord, previousEpoch: number, brokenBefore = false): void {
    const { clock } = this.options;
    const previousEnd = brokenBefore ? "lapsed" : this.leaseShowed;
    this.begun = { record, previousEpoch, previousEnd };
    this.startedMono = clock.monotonicMs();
    this.lastProgressMono = this.startedMono;
  }

  /** Whether {@link begin} has run. */
  get hasBegun(): boolean {
    return this.begun !== undefined;
  }

  /** The record this term wrote, once it has {@link begin}un. */
  get record(): LeaderRecord | undefined {
    return this.begun?.record;
  }

  get epoch(): number {
    return this.begun?.record.epoch ?? 0;
  }

  /** The epoch of the term before this one (the record this term replaced); 0 before {@link begin}. */
  get previousEpoch(): number {
    return this.begun?.previousEpoch ?? 0;
  }

  get startedAtMs(): number {
    return this.begun?.record.sinceMs ?? 0;
  }

  get previousEnd(): PreviousEnd {
    return this.begun?.previousEnd ?? this.leaseShowed;
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the term ended, once it has. */
  get endReason(): LeadershipLostReason | undefined {
    const reason: unknown = this.controller.signal.reason;
    return reason instanceof LeadershipLostError ? reason.reason : undefined;
  }

  /** Monotonic ms left before the first of its deadlines: the local renew deadline, with takeover the takeover one. */
  msToDeadline(): number {
    return Math.min(this.deadlineMono, this.takeoverDeadlineMono ?? Infinity) - this.options.clock.monotonicMs();
  }

  /**
   * With takeover: the term's record, written by a request sent at `writeStartMono`, is its first heartbeat. From now
   * on the term stops `takeoverDeadlineMs` after the start of its last successful heartbeat, and
   * {@link untilHeartbeats} resolves.
   */
  armTakeover(record: LeaderRecord, writeStartMono: number): void {
    if (this.takeoverDeadlineMono !== undefined) return;
    this.armedAtMono = writeStartMono;
    this.takeoverDeadlineMono = writeStartMono + this.options.takeoverDeadlineMs;
    this.heartbeats.resolve(record);
  }

  /** When the first heartbeat (the record write) was sent; the heartbeats' schedule counts from it. */
  takeoverArmedAtMono(): number {
    return this.armedAtMono;
  }

  /** The record to heartbeat with, once {@link armTakeover} has run; never settles without takeover. */
  untilHeartbeats(): Promise<LeaderRecord> {
    return this.heartbeats.promise;
  }

  /**
   * Records a successful heartbeat whose request was sent at `startMono`. As with renewals, one sent after the
   * deadline does not revive a term that has ended.
   */
  heartbeated(startMono: number): void {
    if (this.checkDeadline() || this.takeoverDeadlineMono === undefined) return;
    this.takeoverDeadlineMono = Math.max(this.takeoverDeadlineMono, startMono + this.options.takeoverDeadlineMs);
  }

  /** How long the term has lasted, in ms. */
  heldMs(): number {
    return this.options.clock.monotonicMs() - this.startedMono;
  }

  isLeader(): boolean {
    return !this.checkDeadline();
  }

  assertLeader(): void {
    if (this.checkDeadline()) throw this.controller.signal.reason as LeadershipLostError;
  }

  reportProgress(): void {
    this.lastProgressMono = this.options.clock.monotonicMs();
  }

  /** True when the watchdog's timeout has passed without progress. */
  isStalled(): boolean {
    const { stallTimeoutMs, clock } = this.options;
    return stallTimeoutMs !== undefined && clock.monotonicMs() - this.lastProgressMono > stallTimeoutMs;
  }

  /**
   * Records a successful renewal whose request was sent at `renewStartMono`. A renewal sent after the deadline does
   * not revive a term that has ended: once the task was told to stop, it stays stopped.
   */
  renewed(renewStartMono: number): void {
    if (this.checkDeadline()) return;
    this.deadlineMono = Math.max(this.deadlineMono, renewStartMono + this.options.renewDeadlineMs);
  }

  /** Ends the term if a deadline has passed; returns whether the term is over. */
  checkDeadline(): boolean {
    if (!this.controller.signal.aborted && this.msToDeadline() <= 0) {
      const { renewDeadlineMs, takeoverDeadlineMs, clock } = this.options;
      const silent = this.takeoverDeadlineMono !== undefined && this.takeoverDeadlineMono <= clock.monotonicMs();
      this.end(
        "deadline",
        silent
          ? `no heartbeat succeeded within the takeover deadline (${takeoverDeadlineMs} ms): a contender may take over`
          : `no renewal succeeded within the renew deadline (${renewDeadlineMs} ms)`,
      );
    }
    return this.controller.signal.aborted;
  }

  /** Ends the term (once): aborts the task's signal with a typed reason and reports it. */
  end(reason: LeadershipLostReason, detail: string, cause?: unknown): void {
    if (this.controller.signal.aborted) return;
    const { instanceId, epoch } = this;
    const who =
      this.begun === undefined
        ? `Instance ${instanceId} (lease acquired, term not yet begun)`
        : `Leader ${instanceId} (epoch ${epoch})`;
    const error = new LeadershipLostError(reason, epoch, `${who} stopped leading: ${detail}.`, { cause });
    this.controller.abort(error);
    this.options.logger.warn(error.message, { instanceId, epoch, reason });
    const { clock } = this.options;
    const atMs = clock.wallMs();
    const deadline = this.takeoverDeadlineMono;
    this.emit({
      type: "lease-lost",
      instanceId,
      epoch,
      reason,
      detail,
      atMs,
      // Where the takeover deadline fell on the wall clock, as this process counted it on its monotonic one.
      ...(deadline === undefined ? {} : { takeoverDeadlineAtMs: Math.round(atMs - (clock.monotonicMs() - deadline)) }),
    });
  }

  /** Reports an event once the term has begun; a throwing listener is logged, never allowed to break leadership. */
  emit(event: LeadershipEvent): void {
    if (this.begun !== undefined) emitEvent(this.options, event);
  }
}

/** Calls the `onEvent` listener safely. */
export function emitEvent(
  options: Pick<ResolvedElectorOptions, "onEvent" | "logger" | "instanceId">,
  event: LeadershipEvent,
): void {
  try {
    options.onEvent?.(event);
  } catch (error) {
    options.logger.error(
      `onEvent listener threw on ${event.type}: ${error instanceof Error ? error.message : String(error)}`,
      { instanceId: options.instanceId },
    );
  }
}
