import type { LeaderRecord, LeaseSnapshot } from "../lease/LeaseStore";
import type { ResolvedElectorOptions } from "./options";
import { emitEvent } from "./Term";

/**
 * Takeover below the lease, the contender's side (docs/FAILOVER.md has the argument). A holder with takeover on stops
 * acting `D` (its record's `takeoverDeadlineMs`) after the START of its last successful heartbeat, on its monotonic
 * clock; every heartbeat moves the record's version on. A contender that read version `v` — the read ended at `t` on
 * its own monotonic clock — knows: the heartbeat that wrote `v` was sent before it landed, so before `t`; the holder's
 * clock runs at least `1 − r` as fast as real time, so its deadline has passed `D / (1 − r)` of real time after `t` at
 * the latest; and the contender's clock runs at most `1 + r` as fast, so once it has counted
 * `D × (1 + r) / (1 − r)` on it, that much real time has passed. If `v` is still the version then — the break is
 * conditional on it — no later heartbeat landed, so the holder has stopped. The margin `takeoverMarginMs` comes on top.
 */

/** The elector's options of takeover below the lease (part of `LeaderElectorOptions`). */
export interface TakeoverOptions {
  /**
   * Takeover below the lease: the leader heartbeats (rewrites its record every `heartbeatIntervalMs`) and stops acting
   * — its task's signal fires, `assertLeader()` throws — once no heartbeat has succeeded for `takeoverDeadlineMs`,
   * counted on its monotonic clock from the heartbeat's start. A contender that has seen the same record version for
   * longer than that, with margins for clock rates (`clockDriftRatio`) and for requests on the wire
   * (`takeoverMarginMs`), KNOWS the holder has stopped: it breaks the lease (conditional on that version) and acquires
   * it, seconds after a crash instead of at the lease's expiry. The argument and its assumption: docs/FAILOVER.md.
   *
   * Off by default, because it changes what a term survives: with it, a term ends after `takeoverDeadlineMs` (2.5 s)
   * of failing or hanging storage instead of `renewDeadlineMs` (10 s) — a long-running leader gives up leadership on
   * a storage hiccup it rode out before. Its price is small: one Set Blob Metadata per heartbeat, billed as an "other"
   * operation on general-purpose v2 accounts (3,600 an hour, $0.0016 at list prices: 3 times the renewals). A
   * contender with it off never breaks a lease; a holder with it off is never broken.
   * @default false
   */
  takeover?: boolean;
  /** How often a leader heartbeats when `takeover` is on, in ms. Above 0, below `takeoverDeadlineMs`. @default 1000 */
  heartbeatIntervalMs?: number;
  /**
   * With `takeover`: the leader stops when no heartbeat has succeeded for this long (from the start of the last
   * successful one), in ms. Above `heartbeatIntervalMs`, below `renewDeadlineMs`. Heartbeats that each take less than
   * `min(takeoverDeadlineMs − heartbeatIntervalMs, takeoverDeadlineMs / 2)` (1.25 s at the defaults) never end the
   * term. Written into the record: contenders count the holder's own deadline, whatever theirs is. @default 2500
   */
  takeoverDeadlineMs?: number;
  /**
   * The clock assumption of `takeover`: no process's monotonic clock runs faster or slower than real time by more than
   * this ratio (0.02 = 2 %). From 0 to below 0.5. A contender waits `D × (1 + r) / (1 − r) + takeoverMarginMs` of
   * silence on its own clock before it breaks (`D`: the holder's `takeoverDeadlineMs`). @default 0.02 (40 times the
   * 500 ppm by which NTP may slew a clock)
   */
  clockDriftRatio?: number;
  /**
   * What a contender waits beyond the clock bound before it breaks, in ms (≥ 0): a request the holder sent just before
   * its deadline still lands before the break when it takes less than this (a later one is fenced by its epoch).
   * @default 500
   */
  takeoverMarginMs?: number;
}

/** How long a contender must see one version of a holder's record before it may break, in ms of its own clock. */
export function silenceNeededMs(
  holderDeadlineMs: number,
  options: Pick<ResolvedElectorOptions, "clockDriftRatio" | "takeoverMarginMs">,
): number {
  const { clockDriftRatio: r, takeoverMarginMs } = options;
  return Math.ceil((holderDeadlineMs * (1 + r)) / (1 - r)) + takeoverMarginMs;
}

/** What a contender has seen of the holder: one version, since the end of the first read that returned it. */
interface Silence {
  version: string;
  holder: string;
  epoch: number;
  /** Monotonic ms at which the first read that returned `version` had ended. */
  sinceMono: number;
  neededMs: number;
}

/**
 * Counts a holder's silence for one elector: fed with every read of the lease (a read's end is taken on the clock
 * after its answer arrived), it says when this contender may break. Only a held lease whose record names a takeover
 * deadline, and a store that reports versions, is counted; anything else resets it. Reads that end out of order are
 * harmless: the break is conditional on the version counted, so a stale count can only fail ("changed").
 */
export class SilenceWatch {
  private silence: Silence | undefined;

  constructor(private readonly options: ResolvedElectorOptions) {}

  /** Notes one read of the lease that ended at `readEndMono`. */
  observe(snapshot: LeaseSnapshot, readEndMono: number): void {
    const { state, record, version } = snapshot;
    const deadlineMs = record.takeoverDeadlineMs ?? 0;
    if (!this.options.takeover || state !== "leased" || version === undefined || deadlineMs <= 0) {
      this.silence = undefined;
      return;
    }
    if (this.silence?.version === version) return;
    this.silence = {
      version,
      holder: record.holder,
      epoch: record.epoch,
      sinceMono: readEndMono,
      neededMs: silenceNeededMs(deadlineMs, this.options),
    };
  }

  /** Forgets the count (after a break, whatever its outcome: the version has moved on). */
  reset(): void {
    this.silence = undefined;
  }

  /** Ms until this contender may break (0: now); undefined while it counts no silence. */
  msUntilBreak(): number | undefined {
    const { silence } = this;
    if (silence === undefined) return undefined;
    return Math.max(0, silence.sinceMono + silence.neededMs - this.options.clock.monotonicMs());
  }

  /** The version and record to break, once the count is complete; undefined before. */
  due(record: LeaderRecord): { version: string; mark: LeaderRecord; silentMs: number } | undefined {
    const { silence } = this;
    if (silence === undefined || this.msUntilBreak() !== 0) return undefined;
    return {
      version: silence.version,
      mark: { ...record, brokenBy: this.options.instanceId },
      silentMs: Math.round(this.options.clock.monotonicMs() - silence.sinceMono),
    };
  }
}

/**
 * Breaks the lease of a holder this contender knows has stopped (see {@link SilenceWatch}); true when the break landed.
 * `send` runs one storage request under the caller's timeout and signal. Logs and emits `lease-broken` on success.
 */
export async function breakIfSilent(
  silence: SilenceWatch,
  snapshot: LeaseSnapshot,
  options: ResolvedElectorOptions,
  send: <T>(operation: (signal: AbortSignal) => Promise<T>) => Promise<T>,
): Promise<boolean> {
  const due = silence.due(snapshot.record);
  if (due === undefined) return false;
  const { store, logger, instanceId, clock } = options;
  silence.reset();
  const outcome = await send((signal) => store.breakIfUnchanged(due.version, due.mark, { abortSignal: signal }));
  const { holder, epoch } = snapshot.record;
  if (outcome === "changed") {
    logger.verbose(`Instance ${instanceId}: ${holder} (epoch ${epoch}) wrote again before the break; not broken.`, {
      instanceId,
    });
    return false;
  }
  logger.info(
    `Instance ${instanceId} broke the lease ${store.name} of ${holder} (epoch ${epoch}), silent for ${due.silentMs} ms: it has stopped by its own takeover deadline.`,
    { instanceId, epoch },
  );
  emitEvent(options, {
    type: "lease-broken",
    instanceId,
    holder,
    holderEpoch: epoch,
    silentMs: due.silentMs,
    atMs: clock.wallMs(),
  });
  return true;
}
