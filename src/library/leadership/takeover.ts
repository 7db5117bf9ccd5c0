import type { LeaderRecord, LeaseSnapshot } from "../lease/LeaseStore.js";
import type { ResolvedElectorOptions } from "./options.js";
import { emitEvent } from "./Term.js";

export type { TakeoverOptions } from "./options.js";

/**
 * Takeover below the lease, the contender's side (docs/explanation/guarantees.md#takeover-below-the-lease has the
 * argument). A holder with takeover on stops acting `D` (its record's `takeoverDeadlineMs`) after the START of its last
 * successful heartbeat, on its monotonic clock; every heartbeat moves the record's version on. A contender that read
 * version `v` — the read ended at `t` on its own monotonic clock — knows: the heartbeat that wrote `v` was sent before
 * it landed, so before `t`; the holder's clock runs at least `1 − r` as fast as real time, so its deadline has passed
 * `D / (1 − r)` of real time after `t` at the latest; and the contender's clock runs at most `1 + r` as fast, so once
 * it has counted `D × (1 + r) / (1 − r)` on it, that much real time has passed. If `v` is still the version then — the
 * break is conditional on it — no later heartbeat landed, so the holder has stopped. The margin `takeoverMarginMs`
 * comes on top.
 */

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
 * Breaks the lease of a holder this contender knows has stopped (see {@link SilenceWatch}): "broken" when the break
 * landed, "released" when the holder had given the lease back since the read (free to acquire; nothing was broken),
 * false otherwise. `send` runs one storage request under the caller's timeout and signal. Logs and emits
 * `lease-broken` when it broke the lease.
 */
export async function breakIfSilent(
  silence: SilenceWatch,
  snapshot: LeaseSnapshot,
  options: ResolvedElectorOptions,
  send: <T>(operation: (signal: AbortSignal) => Promise<T>) => Promise<T>,
): Promise<"broken" | "released" | false> {
  const due = silence.due(snapshot.record);
  if (due === undefined) return false;
  const { store, logger, instanceId, clock } = options;
  silence.reset();
  const outcome = await send((signal) => store.breakIfUnchanged(due.version, due.mark, { abortSignal: signal }));
  const { holder, epoch } = snapshot.record;
  if (outcome === "not-held") {
    // Given back between the read and the break: no takeover, and the term after it follows a release.
    logger.verbose(`Instance ${instanceId}: ${holder} (epoch ${epoch}) released the lease before the break.`, {
      instanceId,
    });
    return "released";
  }
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
  return "broken";
}
