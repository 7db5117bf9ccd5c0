import { describe, expect, it } from "vitest";
import { CI_BUDGET, type RegressionSeed } from "./ciConfig";
import { abortAfterEach, checked, failuresOf, half, knownOpen, mainBatch, seed } from "./ciRuns";
import regressionSeeds from "./regressionSeeds.json";
import { describeFailure, replayCommand, runSeed, type SimOptions } from "./simulator";

const { first, count } = half(2);

// The second half of CI's main batch, and the regression seeds, run beside the first half (simulate.test.ts) on the
// other core. With SIM_RUNS=1 (one seed replayed the CI way) it has no seed of the batch to run.
describe("deterministic simulation (issue 8), the budget's second half", () => {
  const abort = abortAfterEach();

  it.skipIf(count === 0)(
    `${count} seeded runs from seed ${first} keep every invariant not known to be open`,
    async () => {
      console.log(
        `Simulating ${count} runs from seed ${first} (SIM_SEED=${seed}: the budget's second half); known open, not checked: ${knownOpen(false)}`,
      );
      expect(await failuresOf(first, count, mainBatch(abort.signal), abort.signal)).toBe("");
    },
    600_000,
  );

  it.each(regressionSeeds as RegressionSeed[])(
    "regression seed $seed stays fixed: $found",
    async (regression) => {
      const options: SimOptions = {
        invariants: checked(regression.invariants),
        faults: new Set(regression.faults),
        abortSignal: abort.signal,
      };
      const outcome = await runSeed(regression.seed, options, CI_BUDGET.shrinkSeconds * 1000);
      expect(outcome.failed ? describeFailure(outcome, replayCommand(outcome.seed, options)) : "").toBe("");
    },
    120_000,
  );
});
