import type { CoordinatorApp } from "../../src/app/context";
import { LeaderWatch, type WatchedElector } from "../../src/coordination/wake/leaderWatch";
import type { MessageQueue } from "../../src/coordination/ports/ports";
import { CLOCK_RATE_BOUND } from "../../src/library/leadership/options";
import { Term, type LeadershipTerm } from "../../src/library/leadership/Term";
import type { LeaderRecord, LeaseStore } from "../../src/library/lease/LeaseStore";
import { delay, type Abortable } from "../../src/library/util/delay";
import { FAULT_WINDOW_S } from "./plan";
import type { SimProcess } from "./network";
import type { SimInstance, SimWorld } from "./world";

/**
 * Takeover below the lease in the simulation (issue 22; docs/explanation/failover.md). The app's defaults run as they
 * do in Azure: every leader heartbeats and stops at its takeover deadline, every tick's attempt counts a holder's
 * silence and breaks a silent holder's lease, and each instance runs the app's leader watcher — armed by its worker
 * invocations, reading the lease every second through its elector. What the simulation adds:
 *
 * - clock drift: each process's monotonic clock runs at its own rate, up to the ratio takeover's clock assumption
 *   allows between two processes (`(1 + r) / (1 − r)`, r the elector's `clockDriftRatio`), often at the extremes;
 * - the wake-up a watcher sends after it broke a lease, handled by a live instance 0–2 s later (the wake function's
 *   queue poll): a tick there, the same attempt a wake-up makes;
 * - in runs with the `slow` or `hang` faults, trouble on the lease blob alone for a while (Azure throttles one blob at
 *   500 requests/s): one process's lease requests land late, answer late, or wait until the trouble ends — so holders
 *   fall silent while their steps go on, heartbeats are slow but succeed, and contenders' reads are slow, often;
 * - the invariant `takeoverOnlyOfStoppedHolder`: when a takeover's break lands, the term it ends has already stopped by
 *   its own rule (its takeover deadline passed on its own clock), unless its process is frozen (a VM paused: its clock
 *   stopped too, outside the assumption — fencing is what protects the state then) or crashed.
 */

/** The largest ratio of two processes' clock rates takeover's assumption allows, for `clockDriftRatio` r. */
export function maxRateRatio(clockDriftRatio: number): number {
  return (1 + clockDriftRatio) / (1 - clockDriftRatio);
}

/**
 * A process's clock rate: exact, at the assumption's extreme, or in between (a third each), so pairs of processes at
 * the extremes are common.
 */
export function drawClockRate(random: () => number, clockDriftRatio = CLOCK_RATE_BOUND): number {
  const extreme = maxRateRatio(clockDriftRatio);
  const pick = random();
  if (pick < 1 / 3) return 1;
  if (pick < 2 / 3) return extreme;
  return 1 + (extreme - 1) * random();
}

/** Longest a watcher's wake-up waits for the wake function's queue poll (host.json: maxPollingInterval 2 s). */
const MAX_WAKE_DELAY_MS = 2000;

/** The app's leader watcher for one simulated instance; after a break, a live instance ticks 0–2 s later. */
export function simLeaderWatch(
  world: SimWorld,
  instance: { process: SimProcess },
  elector: WatchedElector,
  wakeQueue: MessageQueue,
  settings: CoordinatorApp["settings"],
): LeaderWatch {
  return new LeaderWatch(elector, wakeQueue, {
    intervalMs: settings.LEASE_TAKEOVER_DEADLINE_MS > 0 ? settings.LEADER_WATCH_INTERVAL_MS : 0,
    windowMs: 3 * settings.LEASE_DURATION_SECONDS * 1000,
    from: instance.process.name,
    monotonicMs: () => instance.process.clock.monotonicMs(),
    random: world.random,
    afterBreak: () => {
      world.takeover.wakeUpAfterBreak();
      return Promise.resolve();
    },
  });
}

/**
 * A while in which one instance's lease requests are slow, then held (test/sim/takeover.ts, the module comment): from
 * `fromMs` to `heldFromMs` each lands up to `landMaxMs` after it is sent and answers up to `answerMaxMs` after it
 * landed; from `heldFromMs` to `toMs` each waits until the trouble ends, then lands (unless its caller gave up first).
 */
interface LeaseTrouble {
  fromMs: number;
  heldFromMs: number;
  toMs: number;
  landMaxMs: number;
  answerMaxMs: number;
}

/**
 * A while of lease trouble from `fromMs` for `forMs`: slow (up to 3 s to land, 3 s back) throughout, held throughout,
 * or slow and then held (a leader whose slow heartbeats succeed, and then none does), a third each.
 */
function drawTrouble(random: () => number, fromMs: number, forMs: number): LeaseTrouble {
  const toMs = fromMs + forMs;
  const shape = random();
  const heldFromMs = shape < 1 / 3 ? toMs : shape < 2 / 3 ? fromMs : fromMs + Math.round(random() * forMs);
  return {
    fromMs,
    heldFromMs,
    toMs,
    landMaxMs: Math.round(random() * 3000),
    answerMaxMs: Math.round(random() * 3000),
  };
}

/** A landed break that ended a lease, as the invariant sees it. */
interface LandedBreak {
  atMs: number;
  metadata: Record<string, string>;
  conditional: boolean;
}

/** What the world keeps for takeover: the running steps' terms and the breaks already checked. */
export class SimTakeover {
  /** Takeovers (conditional breaks that ended an active lease) so far. */
  takeovers = 0;
  /** Every term whose task started, by holder and epoch (kept after its step ended: a break must not find it live). */
  private readonly terms = new Map<
    string,
    { process: SimProcess; term: LeadershipTerm; startMs: number; taskEnded: boolean }
  >();
  private breaksSeen = 0;
  /**
   * `clockRandom`: the processes' clock rates come from the run's seed but not from its main random source, which
   * drives everything else.
   */
  constructor(
    private readonly world: SimWorld,
    private readonly clockRandom: () => number,
  ) {}

  /** The clock rate of a new process. */
  clockRate(): number {
    return drawClockRate(this.clockRandom);
  }

  /** Lease trouble per instance index, drawn once per run (relative ms from the run's start). */
  private troubles: LeaseTrouble[][] | undefined;

  /** Whether this run has lease trouble: it does when its plan has `slow` or `hang` faults. */
  private troubled(): boolean {
    return this.world.plan.faults.some((fault) => fault.kind === "slow" || fault.kind === "hang");
  }

  private troublesOf(index: number): LeaseTrouble[] {
    if (this.troubles === undefined) {
      const { plan } = this.world;
      const random = this.clockRandom;
      const enabled = this.troubled();
      this.troubles = Array.from({ length: plan.instances }, () => {
        if (!enabled || random() < 0.4) return [];
        return Array.from({ length: 1 + Math.floor(random() * 2) }, () =>
          drawTrouble(random, Math.round(random() * FAULT_WINDOW_S * 1000), 2000 + Math.round(random() * 13_000)),
        );
      });
    }
    return this.troubles[index] ?? [];
  }

  /** The lease store of instance `index`'s processes, with that instance's lease trouble. */
  leaseStoreFor(index: number, store: LeaseStore): LeaseStore {
    const trouble = (): LeaseTrouble | undefined => {
      const { world } = this;
      const now = Date.now();
      if (now >= world.faultEndMs) return undefined; // faults have stopped: so has this
      const at = now - world.startMs;
      return this.troublesOf(index).find((t) => t.fromMs <= at && at < t.toMs);
    };
    const random = this.clockRandom;
    const via =
      <A extends unknown[], R>(send: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        const options = args.at(-1) as Abortable | undefined;
        const abortSignal = typeof options === "object" ? options.abortSignal : undefined;
        const before = trouble();
        const at = Date.now() - this.world.startMs;
        const held = before !== undefined && at >= before.heldFromMs;
        if (before !== undefined)
          await delay(Math.round(held ? before.toMs - at : random() * before.landMaxMs), { abortSignal });
        const result = await send(...args);
        if (before !== undefined && !held) await delay(Math.round(random() * before.answerMaxMs), { abortSignal });
        return result;
      };
    return {
      name: store.name,
      ensureExists: via((o?: Abortable) => store.ensureExists(o)),
      acquire: via((id: string, s: number, o?: Abortable) => store.acquire(id, s, o)),
      renew: via((id: string, o?: Abortable) => store.renew(id, o)),
      release: via((id: string, o?: Abortable) => store.release(id, o)),
      breakLease: via((s: number, o?: Abortable) => store.breakLease(s, o)),
      breakIfUnchanged: via((v: string, r: LeaderRecord, o?: Abortable) => store.breakIfUnchanged(v, r, o)),
      read: via((o?: Abortable) => store.read(o)),
      writeRecord: via((id: string, r: LeaderRecord, o?: Abortable) => store.writeRecord(id, r, o)),
      readRevocation: via((o?: Abortable) => store.readRevocation(o)),
      revoke: via((e: number, o?: Abortable) => store.revoke(e, o)),
      honourRevocation: via((e: number, o?: Abortable) => store.honourRevocation(e, o)),
    };
  }

  /**
   * A step started or ended (the world's `onStep`). In runs with lease trouble, a step that starts while faults last
   * is struck by it one time in three: its leader's lease requests turn slow or held from now on, for 2–10 s — a
   * leader that falls silent while its step goes on, the case takeover must get right.
   */
  onStep(process: SimProcess, phase: "start" | "end", term: LeadershipTerm): void {
    const key = `${process.name}#${term.epoch}`;
    if (phase !== "start") {
      const started = this.terms.get(key);
      if (started !== undefined) started.taskEnded = true;
      return;
    }
    this.terms.set(key, { process, term, startMs: Date.now(), taskEnded: false });
    const { world } = this;
    const index = world.instances.findIndex((instance) => instance.process === process);
    if (index < 0 || Date.now() >= world.faultEndMs || !this.troubled()) return;
    const random = this.clockRandom;
    if (random() >= 1 / 3) return;
    const fromMs = Date.now() - world.startMs;
    this.troublesOf(index).push(drawTrouble(random, fromMs, 2000 + Math.round(random() * 8000)));
  }

  /** A watcher broke a lease: a live instance handles its wake-up soon, as a tick (the wake function's attempt). */
  wakeUpAfterBreak(): void {
    const { world } = this;
    setTimeout(
      () => {
        const live = world.instances.filter((instance) => !instance.process.crashed && !instance.process.frozen);
        const chosen: SimInstance | undefined = live[Math.floor(world.random() * live.length)];
        chosen?.tick(false);
      },
      Math.round(world.random() * MAX_WAKE_DELAY_MS),
    );
  }

  /**
   * `takeoverOnlyOfStoppedHolder`: every takeover's break that landed since the last call ended a term that had
   * stopped by its own rule. Returns one message per violation.
   */
  check(describeTime: (ms: number) => string): string[] {
    const breaks: readonly LandedBreak[] = this.world.account.breaks;
    const problems: string[] = [];
    for (; this.breaksSeen < breaks.length; this.breaksSeen++) {
      const landed = breaks[this.breaksSeen];
      if (landed === undefined || !landed.conditional) continue;
      this.takeovers++;
      const holder = landed.metadata.holder ?? "";
      const epoch = Number(landed.metadata.epoch ?? "0");
      const step = this.terms.get(`${holder}#${epoch}`);
      if (step === undefined || step.process.crashed || step.process.frozen) continue;
      // A freeze in the term's lifetime stopped its clock (a paused VM): outside the assumption; fencing covers it.
      const frozenMeanwhile = this.world.history.freezes.some(
        (freeze) =>
          freeze.process === step.process && freeze.fromMs <= landed.atMs && (freeze.toMs ?? Infinity) >= step.startMs,
      );
      if (frozenMeanwhile || !isLive(step.term, step.taskEnded)) continue;
      const leftMs = step.term instanceof Term ? step.term.msToDeadline() : Number.NaN;
      problems.push(
        leftMs > 0 || Number.isNaN(leftMs)
          ? `a takeover broke the lease of ${holder} (epoch ${epoch}) at ${describeTime(landed.atMs)} while its term was still live by its own clock (${leftMs.toFixed(0)} ms to its deadline)`
          : `a takeover broke the lease of ${holder} (epoch ${epoch}) at ${describeTime(landed.atMs)}, ${(-leftMs).toFixed(0)} ms after its deadline by its own clock, while its task still ran untold: its signal had not fired`,
      );
    }
    return problems;
  }
}

/**
 * Whether a term is live now, read without ending it (the check must not change what the run does): its deadline has
 * not passed on its own clock, or it has but its task still runs untold (its signal has not fired) — a task that only
 * listens to its signal still acts (issue 37.8, seed 20261408 with `slowItems`). A term whose task returned before its
 * deadline passed (its lease not yet given back) is not live once the deadline has passed.
 */
function isLive(term: LeadershipTerm, taskEnded: boolean): boolean {
  if (term.signal.aborted) return false;
  if (!(term instanceof Term)) return term.isLeader();
  return term.msToDeadline() > 0 || !taskEnded;
}
