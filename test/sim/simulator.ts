import fc, { type Scheduler } from "fast-check";
import { INVARIANT_NAMES, InvariantChecker, type InvariantName, type Violation } from "./invariants";
import { FAULT_KINDS, planArb, type FaultKind, type Plan } from "./plan";
import type { UndershootStats } from "./limitsWorld";
import { SIM_TIMING, SimWorld, deterministicUuids, installClock } from "./world";

/** The real monotonic clock, captured before any run fakes `performance`. */
const realNow = performance.now.bind(performance);

/** What a run is allowed to do and what it checks. */
export interface SimOptions {
  invariants: ReadonlySet<InvariantName>;
  faults: ReadonlySet<FaultKind>;
  /** Ends the run in progress at its next step, and makes the seed's further runs (shrinking) pass at once. */
  abortSignal?: AbortSignal;
}

export const ALL_OPTIONS: SimOptions = { invariants: new Set(INVARIANT_NAMES), faults: new Set(FAULT_KINDS) };

/** Figures of one run. */
export interface RunStats {
  virtualS: number;
  requests: number;
  steps: number;
  terms: number;
  jobs: number;
  /** Takeovers: conditional breaks that ended a lease (test/sim/takeover.ts). */
  takeovers: number;
  /** Items that started under limits, and the pools' undershoot (issue 42; undefined: the plan has no limits). */
  limits: (UndershootStats & { items: number; faultEndS: number }) | undefined;
}

/** One simulated run's outcome. */
export interface RunResult {
  violations: Violation[];
  stats: RunStats;
}

/** Lets every promise continuation run (a macrotask on the real event loop: the fake clock does not touch it). */
const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Runs one plan to its end on the virtual clock: requests land one at a time in the order the scheduler picks; when
 * none is in flight the clock jumps to the next timer. Safety invariants are checked after every such step, liveness
 * at the end. Stops at the first violation.
 */
export async function runPlan(plan: Plan, scheduler: Scheduler, options: SimOptions): Promise<RunResult> {
  let ended = (): void => undefined;
  running = new Promise<void>((resolve) => (ended = resolve));
  const clock = installClock();
  const restoreUuids = deterministicUuids(plan.randomSeed);
  const world = new SimWorld(plan, scheduler);
  const checker = new InvariantChecker(world, options.invariants);
  try {
    world.start();
    // Jobs under limits may wait for a grant that never went out to expire (limitsWorld.ts).
    const hardEndMs = world.faultEndMs + world.limits.calmLimitMs(SIM_TIMING.calmLimitMs, SIM_TIMING.tickMs);
    const minEndMs = world.faultEndMs + SIM_TIMING.minCalmMs;
    for (;;) {
      await flush();
      options.abortSignal?.throwIfAborted();
      checker.afterStep();
      if (checker.violations.length > 0) break;
      if (scheduler.count() > 0) {
        await scheduler.waitNext(1);
        continue;
      }
      // A process may be one macrotask behind (the step yields to the event loop with setImmediate between fold
      // batches): let it go on before the clock jumps, or virtual time passes while it merely yielded.
      await flush();
      if (scheduler.count() > 0) continue;
      const now = Date.now();
      if (now >= hardEndMs || (now >= minEndMs && checker.allJobsEnded())) {
        checker.atEnd(now);
        break;
      }
      clock.next();
    }
    return {
      violations: checker.violations,
      stats: {
        virtualS: Math.round((Date.now() - world.startMs) / 1000),
        requests: world.net.requests,
        steps: world.history.steps.length,
        terms: world.history.terms.length,
        jobs: world.jobs.length,
        takeovers: world.takeover.takeovers,
        limits: world.limits.on
          ? {
              ...world.limits.undershoot(Date.now()),
              items: world.limits.intervals.length,
              faultEndS: Math.round((world.faultEndMs - world.startMs) / 1000),
            }
          : undefined,
      },
    };
  } finally {
    world.stop();
    await flush();
    clock.uninstall();
    restoreUuids();
    ended();
  }
}

/** The last run started: settled once it has put the real clock back. */
let running = Promise.resolve();

/**
 * Waits until the run in progress, if any, has put the real clock back (after its `abortSignal` fired): a test that
 * timed out leaves its run going, with the fake timers installed ("Can't install fake timers twice" in the next).
 */
export function runEnded(): Promise<void> {
  return running;
}

/** The error a failing run throws, so fast-check shrinks it. */
export class InvariantViolated extends Error {
  constructor(readonly violations: Violation[]) {
    super(violations.map((v) => `${v.invariant} at ${(v.atMs / 1000).toFixed(3)} s: ${v.message}`).join("\n"));
    this.name = "InvariantViolated";
  }
}

/** The outcome of one seed. */
export interface SeedOutcome {
  seed: number;
  failed: boolean;
  /** The first run's stats (before any shrinking). */
  stats: RunStats | undefined;
  /** Invariants violated by the shrunk counterexample. */
  violations: Violation[];
  plan: Plan | undefined;
  /** The shrunk interleaving: the scheduler's report of the requests, in the order they landed. */
  interleaving: string[];
  /** Runs fast-check made while shrinking. */
  shrinks: number;
  /** An unexpected error in the simulator itself (not an invariant). */
  crash: string | undefined;
}

/**
 * Runs one seed: fast-check generates the plan and the interleaving from it, and on a violation shrinks both to the
 * smallest it finds within `shrinkBudgetMs` (real time). The same seed replays exactly.
 */
export async function runSeed(seed: number, options: SimOptions, shrinkBudgetMs = 60_000): Promise<SeedOutcome> {
  let stats: RunStats | undefined;
  let last: { plan: Plan; scheduler: Scheduler; violations: Violation[] } | undefined;
  let shrinkDeadline: number | undefined;
  const property = fc.asyncProperty(planArb(options.faults), fc.scheduler(), async (plan, scheduler) => {
    // Once the shrink budget is spent, every further candidate "passes" at once: fast-check keeps the smallest failure
    // so far.
    if ((shrinkDeadline !== undefined && realNow() > shrinkDeadline) || options.abortSignal?.aborted === true) return;
    const result = await runPlan(plan, scheduler, options);
    stats ??= result.stats;
    if (result.violations.length > 0) {
      shrinkDeadline ??= realNow() + shrinkBudgetMs;
      last = { plan, scheduler, violations: result.violations };
      throw new InvariantViolated(result.violations);
    }
  });
  const details = await fc.check(property, { seed, numRuns: 1 });
  if (!details.failed)
    return {
      seed,
      failed: false,
      stats,
      violations: [],
      plan: undefined,
      interleaving: [],
      shrinks: 0,
      crash: undefined,
    };
  const error = details.errorInstance;
  const counterexample = details.counterexample;
  const violations = error instanceof InvariantViolated ? error.violations : (last?.violations ?? []);
  const scheduler = counterexample?.[1] ?? last?.scheduler;
  const interleaving = (scheduler?.report() ?? [])
    .filter((task) => task.status !== "pending")
    .map((task) => task.label);
  return {
    seed,
    failed: true,
    stats,
    violations,
    plan: counterexample?.[0] ?? last?.plan,
    interleaving,
    shrinks: details.numShrinks,
    crash:
      error instanceof InvariantViolated
        ? undefined
        : error instanceof Error
          ? (error.stack ?? error.message)
          : String(error),
  };
}

/**
 * A failure as people read it: the seed, what broke, the shrunk plan, the end of the shrunk interleaving, the replay.
 */
export function describeFailure(outcome: SeedOutcome, replay: string): string {
  const lines = [
    `✗ seed ${outcome.seed}: ${outcome.crash === undefined ? outcome.violations.map((v) => v.invariant).join(", ") : "the simulator itself failed"}`,
  ];
  for (const v of outcome.violations) lines.push(`  ${v.invariant} at ${(v.atMs / 1000).toFixed(3)} s: ${v.message}`);
  if (outcome.crash !== undefined) lines.push(`  ${outcome.crash}`);
  lines.push(`  shrunk in ${outcome.shrinks} steps to the plan: ${JSON.stringify(outcome.plan)}`);
  const tail = outcome.interleaving.slice(-40);
  lines.push(
    `  interleaving (${outcome.interleaving.length} requests; the last ${tail.length} before the violation, in landing order):`,
  );
  for (const label of tail) lines.push(`    ${label}`);
  lines.push(`  replay: ${replay}`);
  return lines.join("\n");
}

/** The command that replays a seed with the given invariants and faults. */
export function replayCommand(seed: number, options: SimOptions): string {
  const invariants = INVARIANT_NAMES.every((name) => options.invariants.has(name))
    ? ""
    : ` --invariants ${[...options.invariants].join(",")}`;
  const faults = FAULT_KINDS.every((kind) => options.faults.has(kind))
    ? ""
    : ` --faults ${[...options.faults].join(",")}`;
  return `npm run simulate -- --seed ${seed}${invariants}${faults}`;
}
