import { describe, expect, it } from "vitest";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { defineTaskKind, type TaskLimits } from "../../src/coordination/kinds/taskKinds";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { GRANT_LIFETIME_MS, rateShareCap } from "../../src/coordination/flow/grant";
import { INFERRED_FAILURE_HOLD_MS } from "../../src/coordination/state/heldItems";
import {
  CLOCK_SKEW_MS,
  GRANT_GRACE_MS,
  LEDGER_KEY,
  countedWindowMs,
  ledgerSchema,
  useByPool,
} from "../../src/coordination/state/grantLedger";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import type { CoordinationDeps } from "../../src/coordination/deps";
import { ONE_PASS, readJob, world } from "../support/coordinationWorld";
import { fakeTerm, type MemoryQueue } from "../support/memoryPorts";

/** A kind that sums its items' numbers, under `limits`. */
const summing = (limits: TaskLimits) =>
  defineTaskKind({
    name: "sum",
    concurrency: 2,
    limits,
    process: (input) => Number(input.text),
    aggregate: { empty: () => 0, merge: (a: number, b: number) => a + b },
  });

/** A world of the summing kind on a clock the test moves. */
function limitedWorld(limits: TaskLimits, overrides: Partial<CoordinationDeps> = {}) {
  const clock = { ms: 1_000_000 };
  const w = world({
    registry: new TaskRegistry([summing(limits)]),
    now: () => clock.ms,
    dispatchBatchSize: 1000,
    maxInFlight: 1000,
    workUnitMaxItems: 1000,
    ...overrides,
  });
  return { ...w, clock };
}

const numbers = (count: number) => Array.from({ length: count }, (_, item) => ({ inline: String(item + 1) }));
const sumOf = (count: number) => (count * (count + 1)) / 2;

async function ledgerOf(w: ReturnType<typeof limitedWorld>) {
  const stored = await w.state.read(LEDGER_KEY);
  return ledgerSchema.parse(stored?.value ?? { v: 1, grants: [] });
}

/** Runs the queued work messages through the worker, one at a time; returns the messages' bodies. */
async function runWork(deps: CoordinationDeps, queue: MemoryQueue, dequeueCount?: number): Promise<string[]> {
  const messages = await queue.receive(32, 600);
  for (const message of messages) {
    await processWorkMessage(deps, JSON.parse(message.text ?? "null") as unknown, {
      id: message.id,
      dequeueCount: dequeueCount ?? message.dequeueCount,
      maxDequeueCount: 5,
    });
    await queue.delete(message);
  }
  return messages.map((message) => message.text ?? "");
}

/** Leader steps and worker runs in turn until the job has ended (or `rounds` pass), the clock moved `stepMs` each. */
async function runToEnd(w: ReturnType<typeof limitedWorld>, id: string, rounds = 20, stepMs = 0) {
  for (let round = 0; round < rounds; round++) {
    await runCoordinationStep(w.deps, fakeTerm(2), ONE_PASS);
    const job = await readJob(w.state, id);
    if (job !== undefined && job.status !== "running") return job;
    await runWork(w.deps, w.work);
    w.clock.ms += stepMs;
  }
  return readJob(w.state, id);
}

describe("flow control's grants: written down first, given back, expired, sent again (issue 42)", () => {
  it("a unit goes out only after its grant is in the ledger, and the shares granted never pass the limit", async () => {
    const w = limitedWorld({ concurrency: 3 });
    await storeSubmission(w.deps.system, { kind: "sum", params: null, items: numbers(40) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const sent = w.work.bodies().map((body) => JSON.parse(body) as { v: number; grant: { id: string } });
    expect(sent.length).toBeGreaterThan(0);
    const ledger = await ledgerOf(w);
    expect(sent.every((unit) => unit.v === 3 && ledger.grants.some((grant) => grant.id === unit.grant.id))).toBe(true);
    expect(useByPool(ledger, w.clock.ms).get("k:sum")?.running).toBeLessThanOrEqual(3);
  });

  it("a rate-limited job's permits are spread over as many units as their items at once can use, not given to the first", async () => {
    // 20 starts a second, items run 2 at a time in a unit: a unit can start at most 2 × 1000 / RATE_SLOT_ITEM_MS a
    // second, so the window's permits go to several units that run side by side (bench:limits' sustained job ran 4
    // starts a second of its 20 when the first unit took them all).
    const w = limitedWorld({ rate: { limit: 20, periodSeconds: 1 } });
    await storeSubmission(w.deps.system, { kind: "sum", params: null, items: numbers(400) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const ledger = await ledgerOf(w);
    const shares = ledger.grants.map((grant) => grant.holds.reduce((sum, hold) => sum + (hold.r ?? 0), 0));
    const cap = rateShareCap(2, 1000);
    expect(cap).toBeLessThan(20);
    expect(shares.length).toBeGreaterThanOrEqual(Math.ceil(20 / cap));
    expect(Math.max(...shares)).toBeLessThanOrEqual(cap);
    expect(shares.reduce((sum, share) => sum + share, 0)).toBeLessThanOrEqual(20);
  });

  it("the job completes with the exact aggregate, and every share comes back when its result is folded", async () => {
    const w = limitedWorld({ concurrency: 3, rate: { limit: 1000, periodSeconds: 1 } });
    const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: numbers(100) });
    // A window between rounds: rate permits of finished units are free again.
    const job = await runToEnd(w, id, 20, 2000);
    expect(job?.status).toBe("completed");
    expect(job?.aggregate).toBe(sumOf(100));
    // Concurrency comes back with the result; rate permits a window (and its margin) after the unit's last start.
    const ledger = await ledgerOf(w);
    expect(useByPool(ledger, w.clock.ms, 2).get("k:sum")?.running ?? 0).toBe(0);
    expect(useByPool(ledger, w.clock.ms, 2).get("k:sum")?.ratePermits ?? 0).toBeGreaterThan(0);
    expect(useByPool(ledger, w.clock.ms + countedWindowMs(1000), 2).get("k:sum")?.ratePermits ?? 0).toBe(0);
    // A leader of another epoch, on another clock, counts them held for the clock skew allowed between instances.
    const later = w.clock.ms + countedWindowMs(1000);
    expect(useByPool(ledger, later, 3).get("k:sum")?.ratePermits ?? 0).toBeGreaterThan(0);
    expect(useByPool(ledger, later + CLOCK_SKEW_MS, 3).get("k:sum")?.ratePermits ?? 0).toBe(0);
  });

  it("a unit that is never run keeps its shares until its grant expires and the grace passes; then it is sent again and the job completes", async () => {
    const w = limitedWorld({ concurrency: 2 });
    const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: numbers(8) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const lost = await w.work.receive(32, 600); // taken by a process that dies: never run, never reported
    expect(lost.length).toBeGreaterThan(0);
    // Another job of the kind gets nothing while the lost units hold every share.
    await storeSubmission(w.deps.system, { kind: "sum", params: null, items: numbers(4) });
    w.clock.ms += GRANT_LIFETIME_MS; // expired, but within the grace: still held
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(await w.work.receive(32, 600)).toEqual([]);
    w.clock.ms += GRANT_GRACE_MS;
    const job = await runToEnd(w, id);
    expect(job?.status).toBe("completed");
    expect(job?.aggregate).toBe(sumOf(8));
  });

  it("a worker that receives a unit after its grant expired sends it back whole; it is sent again with a new grant and counted once", async () => {
    const w = limitedWorld({ concurrency: 4 });
    const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: numbers(6) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const [first] = w.work.bodies().map((body) => JSON.parse(body) as { grant: { id: string; expiresAtMs: number } });
    // The worker's clock is past the grant's expiry (the unit sat on the queue too long).
    await runWork({ ...w.deps, now: () => (first?.grant.expiresAtMs ?? 0) + 1 }, w.work);
    const regrant = w.results.bodies().map((body) => JSON.parse(body) as { v: number; grant: { regrant?: boolean } });
    expect(regrant.every((result) => result.v === 3 && result.grant.regrant === true)).toBe(true);
    // A grant that expired makes the unit's next one last twice as long (its items may be slower than a grant).
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const again = w.work.bodies().map((body) => JSON.parse(body) as { grant: { expiresAtMs: number } });
    expect(again.map((unit) => unit.grant.expiresAtMs - w.clock.ms)).toEqual(again.map(() => 2 * GRANT_LIFETIME_MS));
    const job = await runToEnd(w, id);
    expect(job?.status).toBe("completed");
    expect(job?.aggregate).toBe(sumOf(6));
    expect(job?.resend ?? []).toEqual([]);
  });

  it("a leader that dies after writing its grants but before sending: a new leader counts them, and sends the units once they expire", async () => {
    const w = limitedWorld({ concurrency: 2 });
    const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: numbers(10) });
    const send = w.work.send.bind(w.work);
    w.work.send = () => Promise.reject(new Error("the process died (test)"));
    // The step reports the job's trouble and goes on (job-pass-failed): what it wrote is what a crash leaves.
    expect((await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS)).jobErrors).toBe(1);
    w.work.send = send;
    expect(useByPool(await ledgerOf(w), w.clock.ms).get("k:sum")?.running).toBe(2);
    // The next leader sends nothing while the dead leader's grants hold the shares…
    await runCoordinationStep(w.deps, fakeTerm(2), ONE_PASS);
    expect(w.work.bodies()).toEqual([]);
    // …and everything once they expire.
    w.clock.ms += GRANT_LIFETIME_MS + GRANT_GRACE_MS;
    const job = await runToEnd(w, id);
    expect(job?.status).toBe("completed");
    expect(job?.aggregate).toBe(sumOf(10));
  });

  it("a poisoned unit's grant is given back, so the kind's other work goes on", async () => {
    const w = limitedWorld({ concurrency: 2 });
    const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: numbers(4) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    // The host moves every unit to the poison queue after its deliveries failed.
    for (const message of await w.work.receive(32, 600)) {
      await w.poison.send([message.text ?? ""]);
      await w.work.delete(message);
    }
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    // The shares come back at once; the items are held for their units' own results (issue 43), then fail.
    expect(useByPool(await ledgerOf(w), w.clock.ms).get("k:sum")?.running ?? 0).toBe(0);
    w.clock.ms += INFERRED_FAILURE_HOLD_MS + 60_000;
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(w.state, id);
    expect(job?.failedCount).toBe(4);
  });

  it("a leader without the kind holds a job to the limits its submitter stored, and sends nothing of a job whose kind has per-key limits", async () => {
    const kindWide = limitedWorld({ concurrency: 1 });
    const { id } = await storeSubmission(kindWide.deps.system, {
      kind: "sum",
      params: null,
      items: numbers(6),
      kindLimits: { concurrency: 1 },
    });
    const lacking = { ...kindWide.deps, registry: new TaskRegistry([]), workUnitConcurrency: 4 };
    await runCoordinationStep(lacking, fakeTerm(1), ONE_PASS);
    const units = kindWide.work.bodies().map((body) => JSON.parse(body) as { grant: { pools: { c?: number }[] } });
    expect(units.length).toBeGreaterThan(0);
    expect(units.reduce((sum, unit) => sum + (unit.grant.pools[0]?.c ?? 0), 0)).toBe(1);
    expect((await readJob(kindWide.state, id))?.status).toBe("running");

    const keyed = limitedWorld({ key: (item) => item.text ?? "", perKey: { concurrency: 1 } });
    await storeSubmission(keyed.deps.system, {
      kind: "sum",
      params: null,
      items: numbers(6),
      kindLimits: { perKey: { concurrency: 1 }, keyed: true },
    });
    await runCoordinationStep({ ...keyed.deps, registry: new TaskRegistry([]) }, fakeTerm(1), ONE_PASS);
    expect(keyed.work.bodies()).toEqual([]);
  });
});
