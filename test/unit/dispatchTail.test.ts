/**
 * A job's last units do not wait for a round of their own (issue 24): when what is left of a job past the in-flight
 * window fits in WORK_UNIT_SPREAD units and in half the window, it goes out with the window; a longer rest waits for
 * results as before.
 */
import { describe, expect, it } from "vitest";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { ONE_PASS, item, params, readJob, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/** Units of at most 10 items, a window (and a pass's budget) of 100 items, a spread of 4 units. */
const UNITS = { dispatchBatchSize: 100, maxInFlight: 100, workUnitMaxItems: 10, workUnitSpread: 4 };

async function firstPass(
  items: { inline: string }[],
  overrides: Partial<typeof UNITS> & { workUnitMaxBytes?: number },
) {
  const w = world({ ...UNITS, ...overrides });
  const { id } = await storeSubmission(w.deps.system, { kind: "group-by", params, items });
  const report = await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
  const units = w.work.bodies().map((body) => {
    const unit = JSON.parse(body) as { first: number; inputs: unknown[] };
    return { first: unit.first, count: unit.inputs.length };
  });
  return { ...w, id, report, units };
}

const items = (count: number) => Array.from({ length: count }, (_, n) => item(`k${n % 7}`, n));

describe("dispatch: a job's tail goes out with the window", () => {
  it("130 items: the window's 100 and the rest's 3 units (≤ 4) go out in the first pass", async () => {
    const { report, units, state, id } = await firstPass(items(130), {});
    expect(report.dispatched).toBe(130);
    expect(units.map((unit) => unit.count)).toEqual(Array.from({ length: 13 }, () => 10));
    expect((await readJob(state, id))?.dispatched).toBe(130);
  });

  it("150 items: the rest is 5 units (> 4), so it waits for results; nothing past the window is sent", async () => {
    const { report, units, state, id, deps } = await firstPass(items(150), {});
    expect(report.dispatched).toBe(100);
    expect(units).toHaveLength(10);
    expect((await readJob(state, id))?.dispatched).toBe(100);
    // With no results, the next pass sends nothing either.
    expect((await runCoordinationStep(deps, fakeTerm(1), ONE_PASS)).dispatched).toBe(0);
  });

  it("the tail is at most half the window: 160 items in units of 7 leave 55 past it, 8 units (≤ 16) but more than 50 items", async () => {
    // A spread of 16 makes the units ⌈100 ÷ 16⌉ = 7 items: the window's 15 units carry 105 (the last one goes past it).
    const { report, units } = await firstPass(items(160), { workUnitSpread: 16 });
    expect(units.map((unit) => unit.count)).toEqual(Array.from({ length: 15 }, () => 7));
    expect(report.dispatched).toBe(105);
  });

  it("with a small window (DISPATCH_BATCH_SIZE lowered for costly items) the tail stays within half of it", async () => {
    // A window of 4 items in units of 1: a rest of 6 is 6 units (≤ 16) but more than 2 items, so it waits for results.
    const { report } = await firstPass(items(10), {
      dispatchBatchSize: 4,
      maxInFlight: 4,
      workUnitMaxItems: 1,
      workUnitSpread: 16,
    });
    expect(report.dispatched).toBe(4);
  });

  it("the rest is counted in units as packed, not in items: 30 items in units of 3 by bytes are 10 units (> 4)", async () => {
    // Each unit holds 3 of these items by bytes (10 by count): the rest of 30 items is 10 units, not 3.
    const padded = Array.from({ length: 130 }, (_, n) => ({
      inline: JSON.stringify({ k: "k", v: n, pad: "x".repeat(300) }),
    }));
    const { report, units } = await firstPass(padded, { workUnitMaxBytes: 1400 });
    const perUnit = new Set(units.map((unit) => unit.count));
    expect([...perUnit]).toEqual([3]);
    expect(report.dispatched).toBeLessThanOrEqual(102); // the window, its last unit going past by less than one unit
  });
});
