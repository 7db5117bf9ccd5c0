import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SCENARIOS } from "../../scripts/verification/chaos/scenarios/index";

/**
 * The chaos suite in quick mode, one test per scenario, so it cannot rot: real faults in real instance processes on
 * a real Azurite; each scenario must pass with zero violations of every invariant. On failure the message lists the
 * violations; the timeline SVG and event log are in the temporary folder named in it.
 */
describe("chaos suite (quick)", () => {
  const outDir = mkdtempSync(join(tmpdir(), "chaos-"));
  let failed = false;
  afterAll(() => {
    // Keep the evidence of a failure; clean up after a clean run.
    if (!failed) rmSync(outDir, { recursive: true, force: true });
  });

  for (const scenario of SCENARIOS) {
    it(`${scenario.name}: passes with no invariant violated`, async () => {
      const result = await scenario.run({ seed: 1, quick: true, outDir, log: () => undefined });
      failed ||= !result.passed;
      expect(result.violations, `violations (evidence in ${outDir})`).toEqual([]);
      expect(result.invariants).toEqual({
        overlappingSteps: 0,
        lostItems: 0,
        doubleCounted: 0,
        unreportedBadItems: 0,
        staleWrites: 0,
        lateLeaders: 0,
      });
      expect(result.faultsInjected).toBeGreaterThan(0);
      expect(result.passed).toBe(true);
    }, 300_000);
  }
});
