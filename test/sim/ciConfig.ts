import type { InvariantName } from "./invariants";
import type { FaultKind } from "./plan";

/**
 * What CI simulates (test/sim/simulate.test.ts and simulateSecondHalf.test.ts, half each): a fixed budget of seeds,
 * printed so any failure replays with `npm run simulate -- --seed N`. Override the first seed with SIM_SEED and the
 * count with SIM_RUNS.
 */
export const CI_BUDGET = { seed: 20_261_123, runs: 1_000, shrinkSeconds: 20 } as const;

/**
 * Issue 42's limits model in CI (`limits.ts`): a batch of its own, with every fault the budget above injects (less
 * {@link LIMITS_KNOWN_OPEN_FAULTS}) and `limits`. The budget above leaves `limits` out, so it runs the plans it ran
 * before (without the fault the plan's `limits` field draws nothing).
 */
export const CI_LIMITS_BUDGET = { seed: 20_261_123, runs: 40, shrinkSeconds: 20 } as const;

/**
 * Faults the limits batch does not inject because, with limits, they reach a hole that is still open, each with what
 * it waits on (`npm run simulate -- --faults duplicates,limits` still finds it).
 */
export const LIMITS_KNOWN_OPEN_FAULTS: Partial<Record<FaultKind, string>> = {};

/**
 * Invariants whose holes are not yet fixed on main, each with the issue item it waits on. CI does not check them
 * (the simulator still can: `npm run simulate -- --invariants NAME`). Keep this list honest and short: remove an
 * entry in the change that fixes its hole.
 */
export const KNOWN_OPEN: Partial<Record<InvariantName, string>> = {};

/**
 * Faults CI does not inject yet because they reach a hole that is still open, each with what it waits on. The
 * simulator still injects them by default (`npm run simulate`).
 */
export const KNOWN_OPEN_FAULTS: Partial<Record<FaultKind, string>> = {};

/** A seed that once failed, replayed by CI with the invariants and faults it failed under. */
export interface RegressionSeed {
  seed: number;
  invariants: InvariantName[];
  faults: FaultKind[];
  /** What it found. */
  found: string;
  /** What fixed it. */
  fixedBy: string;
}
