import { afterEach } from "vitest";
import { CI_BUDGET, KNOWN_OPEN, KNOWN_OPEN_FAULTS, LIMITS_KNOWN_OPEN_FAULTS } from "./ciConfig";
import { INVARIANT_NAMES, type InvariantName } from "./invariants";
import { FAULT_KINDS, type FaultKind } from "./plan";
import { LIMIT_FAULTS } from "./limits";
import { describeFailure, runEnded, replayCommand, runSeed, type SimOptions } from "./simulator";

/**
 * What CI's simulation files share (`simulate.test.ts`, `simulateSecondHalf.test.ts`): CI's budget of seeds is split in
 * two halves, one per file, which the `simulation` project runs side by side, one on each core.
 */

/** The first seed and the count of the whole budget (SIM_SEED and SIM_RUNS override them). */
export const seed = Number(process.env.SIM_SEED ?? CI_BUDGET.seed);
export const runs = Number(process.env.SIM_RUNS ?? CI_BUDGET.runs);

/** The seeds of one half of the budget: the first half has the odd seed when the count is odd. */
export function half(which: 1 | 2): { first: number; count: number } {
  const firstCount = Math.ceil(runs / 2);
  return which === 1 ? { first: seed, count: firstCount } : { first: seed + firstCount, count: runs - firstCount };
}

/** Invariants CI checks: all but the known-open ones. */
export const checked = (names: readonly InvariantName[]): Set<InvariantName> =>
  new Set(names.filter((name) => KNOWN_OPEN[name] === undefined));

/** Faults CI injects: all but the known-open ones; the limits model only in its own batch. */
export const ciFaults = (limits: boolean): Set<FaultKind> =>
  new Set(
    FAULT_KINDS.filter(
      (kind) =>
        KNOWN_OPEN_FAULTS[kind] === undefined &&
        (limits
          ? LIMITS_KNOWN_OPEN_FAULTS[kind] === undefined
          : !(LIMIT_FAULTS as readonly FaultKind[]).includes(kind)),
    ),
  );

/** The known-open invariants and faults, as the batches print them. */
export function knownOpen(limits: boolean): string {
  const open = [
    ...Object.entries(KNOWN_OPEN),
    ...Object.entries(KNOWN_OPEN_FAULTS),
    ...(limits ? Object.entries(LIMITS_KNOWN_OPEN_FAULTS) : []),
  ].map(([name, waitsOn]) => `${name} (${waitsOn})`);
  return open.length > 0 ? open.join("; ") : "none";
}

/** Runs `count` seeds from `first`; the failures as people read them. */
export async function failuresOf(
  first: number,
  count: number,
  options: SimOptions,
  signal: AbortSignal,
): Promise<string> {
  const failures: string[] = [];
  for (let run = 0; run < count && !signal.aborted; run++) {
    const outcome = await runSeed(first + run, options, CI_BUDGET.shrinkSeconds * 1000);
    if (outcome.failed) failures.push(describeFailure(outcome, replayCommand(outcome.seed, options)));
  }
  return failures.join("\n\n");
}

/**
 * An abort signal for the current test, renewed after each: a test that timed out leaves its runs going, fake clock
 * and all, so they are ended before the next test installs its own.
 */
export function abortAfterEach(): { readonly signal: AbortSignal } {
  let abort = new AbortController();
  afterEach(async () => {
    abort.abort();
    await runEnded();
    abort = new AbortController();
  });
  return {
    get signal() {
      return abort.signal;
    },
  };
}

/** The main batch's options: every invariant and fault not known to be open, without the limits model. */
export function mainBatch(signal: AbortSignal): SimOptions {
  return { invariants: checked(INVARIANT_NAMES), faults: ciFaults(false), abortSignal: signal };
}
