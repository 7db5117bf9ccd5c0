import { hostname } from "node:os";
import { randomUUID } from "node:crypto";
import { ConfigurationError } from "../errors.js";
import type { LeaseStore } from "../lease/LeaseStore.js";
import { systemClock, type Clock } from "../util/clock.js";
import { silentLogger, type Logger } from "../util/logger.js";
import type { Abortable } from "../util/delay.js";
import type { LeadershipEvent } from "./events.js";

/** The elector's options of takeover below the lease (part of `LeaderElectorOptions`). */
export interface TakeoverOptions {
  /**
   * Takeover below the lease: the leader heartbeats (rewrites its record every `heartbeatIntervalMs`) and stops acting
   * — its task's signal fires, `assertLeader()` throws — once no heartbeat has succeeded for `takeoverDeadlineMs`,
   * counted on its monotonic clock from the heartbeat's start. A contender that has seen the same record version for
   * longer than that, with margins for clock rates (`clockDriftRatio`) and for requests on the wire
   * (`takeoverMarginMs`), KNOWS the holder has stopped: it breaks the lease (conditional on that version) and acquires
   * it, seconds after a crash instead of at the lease's expiry. The argument and its assumption:
   * docs/explanation/guarantees.md#takeover-below-the-lease.
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
   * this ratio (0.1 = 10 %). From 0 to below 0.5. A contender waits `D × (1 + r) / (1 − r) + takeoverMarginMs` of
   * silence on its own clock before it breaks (`D`: the holder's `takeoverDeadlineMs`), so the part of the wait beyond
   * `D` grows with `D`. @default 0.1 (Linux lets a clock's rate be set 10 % off, adjtimex's tick; chrony slews by up to
   * 8.3 %, its `maxslewrate`; CLOCK_MONOTONIC follows both: docs/contributing/failover-argument.md)
   */
  clockDriftRatio?: number;
  /**
   * What a contender waits beyond the clock bound before it breaks, in ms (≥ 0): a request the holder sent just before
   * its deadline still lands before the break when it takes less than `takeoverMarginMs / (1 + r)` with clocks at the
   * bound — about 0.6 s more with clocks within NTP's usual 500 ppm (a later one is fenced by its epoch).
   * @default 50
   */
  takeoverMarginMs?: number;
}

/**
 * The default of `clockDriftRatio`: the rate bound takeover's argument assumes
 * (docs/explanation/guarantees.md#takeover-below-the-lease, assumption A1). Linux refuses a tick more than 10 % off its
 * nominal length (adjtimex(2), `ADJ_TICK`), chrony slews by at most 8.3 % (`maxslewrate`), and CLOCK_MONOTONIC follows
 * both.
 */
export const CLOCK_RATE_BOUND = 0.1;

/** The default of `requestTimeoutMs`: how long one storage request of the elector may take, in ms. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 3000;

/**
 * Options for {@link LeaderElector}. Timing rules follow client-go: renew interval \< renew deadline \< lease duration.
 */
export interface LeaderElectorOptions extends TakeoverOptions {
  /** Where the lease lives. */
  store: LeaseStore;
  /**
   * This instance's id, carried in every log and event and in the leader record. @default `<hostname>-<pid>-<random>`
   */
  instanceId?: string;
  /** Server-side lease duration, in seconds. Azure allows 15–60. @default 15 */
  leaseDurationS?: number;
  /** How often the leader renews, in ms. @default 3000 */
  renewIntervalMs?: number;
  /**
   * Local renew deadline, in ms: the leader aborts its task when no renewal has succeeded for this long (measured on
   * the monotonic clock from the start of the last successful renewal), so it stops before the server-side lease can
   * expire and pass on. Must be above the renew interval and below the lease duration. @default 10000
   */
  renewDeadlineMs?: number;
  /**
   * How long a contender waits between attempts in {@link LeaderElector.lead}, and a leader between failed renewals, in
   * ms. @default 1000
   */
  retryIntervalMs?: number;
  /** Spread of the retry interval, as a ratio from 0 to 1 (0.2 = ±20 %). @default 0.2 */
  jitterRatio?: number;
  /**
   * Timeout of one storage request, in ms; during a term it is also capped by the time left to the deadline. @default
   * 3000
   */
  requestTimeoutMs?: number;
  /**
   * Watchdog: give up leadership when the task reports no progress for this long, in ms. Off when undefined. @default
   * undefined
   */
  stallTimeoutMs?: number;
  /** Where the library logs. @default a silent logger */
  logger?: Logger;
  /** Called synchronously for every leadership event. Exceptions it throws are logged and ignored. */
  onEvent?: (event: LeadershipEvent) => void;
  /** Time source; tests pass a fake. @default the system clock */
  clock?: Clock;
  /** Random source for jitter, returning [0, 1). @default Math.random */
  random?: () => number;
  /**
   * The highest epoch already stored anywhere the leader writes (e.g. read from a state document every term writes
   * first). A new term's epoch is `max(record epoch, floor) + 1`, so it still exceeds every stored epoch when the
   * lease blob — and with it the epoch counter in its metadata — was deleted or recreated. Read after acquiring,
   * beside the record. Must resolve to a whole number ≥ 0. @default none (the record alone counts)
   */
  readEpochFloor?: (options: Abortable) => Promise<number>;
  /**
   * Stores a new term's epoch where {@link LeaderElectorOptions.readEpochFloor} reads it, after the record is written
   * and before the term begins (so before any event or task). Reject with a `StaleEpochError` when another term has
   * already stored this epoch — possible only when the lease blob was lost after that term read the floor — and the
   * attempt ends as "not-acquired" (its lease released) instead of a second term with the same epoch. Any other
   * rejection ends the attempt with that error. `logger` is where the attempt logs (the elector's, or the call's).
   * @default none
   */
  claimEpoch?: (claim: EpochClaim, options: Abortable & { logger: Logger }) => Promise<void>;
}

/** What {@link LeaderElectorOptions.claimEpoch} stores: the term about to begin. */
export interface EpochClaim {
  /** The instance whose term it is. */
  readonly instanceId: string;
  /** The term's epoch (fencing token). */
  readonly epoch: number;
  /** Wall-clock ms the term begins at (its record's `sinceMs`, and the term's `startedAtMs`). */
  readonly startedAtMs: number;
  /**
   * Checks that the lease is still held, before the claim writes.
   *
   * @throws LeadershipLostError when the lease is already lost (e.g. the process froze past its renew deadline).
   */
  assertLeader(): void;
}

/** The timings of a term that must be in order, in the units of {@link LeaderElectorOptions}. */
export interface LeaseTimings {
  leaseDurationS: number;
  renewIntervalMs: number;
  renewDeadlineMs: number;
  /** Only when takeover is on (both, or neither). */
  heartbeatIntervalMs?: number;
  takeoverDeadlineMs?: number;
  /** The clock-rate bound (docs/explanation/guarantees.md, A1). @default {@link CLOCK_RATE_BOUND} */
  clockDriftRatio?: number;
}

/** How {@link leaseTimingProblems} names each timing in its messages (the takeover ones only when it checks them). */
export type LeaseTimingNames = Readonly<
  Record<"leaseDurationS" | "renewIntervalMs" | "renewDeadlineMs", string> &
    Partial<Record<"heartbeatIntervalMs" | "takeoverDeadlineMs", string>>
>;

/** The option names, as {@link resolveElectorOptions} reports them. */
const OPTION_NAMES: LeaseTimingNames = {
  renewIntervalMs: "renewIntervalMs",
  renewDeadlineMs: "renewDeadlineMs",
  leaseDurationS: "the lease duration",
  heartbeatIntervalMs: "heartbeatIntervalMs",
  takeoverDeadlineMs: "takeoverDeadlineMs",
};

/**
 * The timing rule, as in client-go's leader election: renew interval < renew deadline < lease duration — a leader
 * renews several times before it gives up, and gives up before its lease can expire and pass on. With takeover, the
 * same shape below it: heartbeat interval < takeover deadline < renew deadline — a leader heartbeats more than once
 * before it gives up, and a takeover comes before the renew deadline would have ended the term anyway. The one place
 * the rule is checked: the elector's options here, and the app's settings (`src/app/settings.ts`, with its setting
 * names).
 *
 * @returns one message per broken part, naming the values (by `names`) and what they must be; empty when all is in
 *   order
 */
export function leaseTimingProblems(timings: LeaseTimings, names: LeaseTimingNames = OPTION_NAMES): string[] {
  const { leaseDurationS, renewIntervalMs, renewDeadlineMs, heartbeatIntervalMs, takeoverDeadlineMs } = timings;
  const problems: string[] = [];
  if (heartbeatIntervalMs !== undefined && takeoverDeadlineMs !== undefined) {
    const heartbeat = names.heartbeatIntervalMs ?? OPTION_NAMES.heartbeatIntervalMs;
    const deadline = names.takeoverDeadlineMs ?? OPTION_NAMES.takeoverDeadlineMs;
    if (!(heartbeatIntervalMs > 0 && heartbeatIntervalMs < takeoverDeadlineMs))
      problems.push(
        `${heartbeat} (${heartbeatIntervalMs}) must be above 0 and below ${deadline} (${takeoverDeadlineMs})`,
      );
    if (!(takeoverDeadlineMs < renewDeadlineMs))
      problems.push(`${deadline} (${takeoverDeadlineMs}) must be below ${names.renewDeadlineMs} (${renewDeadlineMs})`);
  }
  if (!(renewIntervalMs < renewDeadlineMs))
    problems.push(
      `${names.renewIntervalMs} (${renewIntervalMs}) must be below ${names.renewDeadlineMs} (${renewDeadlineMs})`,
    );
  // A leader whose clock runs slow by the rate bound counts its renew deadline in more real time than it reads: it must
  // still give up before the lease (counted by storage from after the renewal's start) can expire and pass on.
  const rate = timings.clockDriftRatio ?? CLOCK_RATE_BOUND;
  const leaseMs = leaseDurationS * 1000;
  const latestMs = Math.min(leaseMs - 1, Math.floor(leaseMs * (1 - rate)));
  const percent = `${Math.round(rate * 1000) / 10} %`;
  if (!(renewDeadlineMs <= latestMs))
    problems.push(
      `${names.renewDeadlineMs} (${renewDeadlineMs}) must be at most ${latestMs} ms: ${names.leaseDurationS} (${leaseMs} ms) less ${percent}, so a leader whose clock runs ${percent} slow stops before its lease can expire`,
    );
  return problems;
}

/** Whether a clock-rate bound is one the argument can use: 0 to below 0.5. */
function validRate(ratio: number): boolean {
  return Number.isFinite(ratio) && ratio >= 0 && ratio < 0.5;
}

/** Options with every default applied. */
export type ResolvedElectorOptions = Required<
  Omit<LeaderElectorOptions, "stallTimeoutMs" | "onEvent" | "readEpochFloor" | "claimEpoch">
> &
  Pick<LeaderElectorOptions, "stallTimeoutMs" | "onEvent" | "readEpochFloor" | "claimEpoch">;

/**
 * Applies defaults (in one block) and validates every option up front.
 *
 * @throws ConfigurationError naming the option, its value and the allowed range.
 */
export function resolveElectorOptions(options: LeaderElectorOptions): ResolvedElectorOptions {
  const resolved = {
    store: options.store,
    instanceId: options.instanceId ?? `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    leaseDurationS: options.leaseDurationS ?? 15,
    renewIntervalMs: options.renewIntervalMs ?? 3000,
    renewDeadlineMs: options.renewDeadlineMs ?? 10_000,
    retryIntervalMs: options.retryIntervalMs ?? 1000,
    jitterRatio: options.jitterRatio ?? 0.2,
    requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
    stallTimeoutMs: options.stallTimeoutMs,
    logger: options.logger ?? silentLogger,
    onEvent: options.onEvent,
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
    readEpochFloor: options.readEpochFloor,
    claimEpoch: options.claimEpoch,
    takeover: options.takeover ?? false,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 1000,
    takeoverDeadlineMs: options.takeoverDeadlineMs ?? 2500,
    clockDriftRatio: options.clockDriftRatio ?? CLOCK_RATE_BOUND,
    takeoverMarginMs: options.takeoverMarginMs ?? 50,
  };
  const problems: string[] = [];
  const check = (ok: boolean, message: string): void => {
    if (!ok) problems.push(message);
  };
  const { leaseDurationS, renewIntervalMs } = resolved;
  check(
    Number.isInteger(leaseDurationS) && leaseDurationS >= 15 && leaseDurationS <= 60,
    `leaseDurationS is ${leaseDurationS}; Azure allows a whole number of seconds from 15 to 60`,
  );
  check(
    Number.isFinite(renewIntervalMs) && renewIntervalMs > 0,
    `renewIntervalMs is ${renewIntervalMs}; it must be a positive number of ms`,
  );
  const { takeover, heartbeatIntervalMs, takeoverDeadlineMs, clockDriftRatio, takeoverMarginMs } = resolved;
  problems.push(
    ...leaseTimingProblems({
      ...(takeover ? resolved : { leaseDurationS, renewIntervalMs, renewDeadlineMs: resolved.renewDeadlineMs }),
      // The rate bound applies with or without takeover; an invalid one is reported below and not used here.
      clockDriftRatio: validRate(resolved.clockDriftRatio) ? resolved.clockDriftRatio : CLOCK_RATE_BOUND,
    }),
  );
  if (takeover) {
    check(
      Number.isFinite(heartbeatIntervalMs) && Number.isFinite(takeoverDeadlineMs),
      `heartbeatIntervalMs (${heartbeatIntervalMs}) and takeoverDeadlineMs (${takeoverDeadlineMs}) must be numbers of ms`,
    );
    check(validRate(clockDriftRatio), `clockDriftRatio is ${clockDriftRatio}; allowed: 0 to below 0.5`);
    check(
      Number.isFinite(takeoverMarginMs) && takeoverMarginMs >= 0,
      `takeoverMarginMs is ${takeoverMarginMs}; it must be a number of ms ≥ 0`,
    );
  }
  check(
    Number.isFinite(resolved.retryIntervalMs) && resolved.retryIntervalMs > 0,
    `retryIntervalMs is ${resolved.retryIntervalMs}; it must be a positive number of ms`,
  );
  check(
    resolved.jitterRatio >= 0 && resolved.jitterRatio <= 1,
    `jitterRatio is ${resolved.jitterRatio}; allowed: 0 to 1`,
  );
  check(
    Number.isFinite(resolved.requestTimeoutMs) && resolved.requestTimeoutMs > 0,
    `requestTimeoutMs is ${resolved.requestTimeoutMs}; it must be a positive number of ms`,
  );
  check(
    resolved.stallTimeoutMs === undefined ||
      (Number.isFinite(resolved.stallTimeoutMs) && resolved.stallTimeoutMs > renewIntervalMs),
    `stallTimeoutMs is ${resolved.stallTimeoutMs}; it must be above renewIntervalMs (${renewIntervalMs}), or left undefined to turn the watchdog off`,
  );
  check(
    /^[\w.:@-]{1,128}$/.test(resolved.instanceId),
    `instanceId ${JSON.stringify(resolved.instanceId)} must be 1–128 letters, digits or . _ : @ -`,
  );
  if (problems.length > 0) throw new ConfigurationError(`Invalid leader election options: ${problems.join("; ")}.`);
  return resolved;
}
