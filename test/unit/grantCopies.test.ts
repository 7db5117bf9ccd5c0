import { describe, expect, it, vi } from "vitest";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { defineTaskKind } from "../../src/coordination/kinds/taskKinds";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { processWorkMessage, type WorkOutcome } from "../../src/coordination/worker/worker";
import { abortReason } from "../../src/library/util/delay";
import { GRANT_LIFETIME_MS, MAX_EXPIRIES, MAX_LOST_DELIVERIES } from "../../src/coordination/flow/grant";
import { GRANT_GRACE_MS, LEDGER_KEY, ledgerSchema, useByPool } from "../../src/coordination/state/grantLedger";
import { ONE_PASS, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Copies of one granted unit (issue 42): a send the storage SDK retried puts a unit on the queue twice, and queues
 * deliver at least once. Each copy holds the same grant, so two copies running at once would run twice the grant's
 * shares.
 */

/** A job of two items whose one unit's first delivery claimed its grant and runs both items, blocked ("frozen"). */
async function frozenClaimant() {
  const w = blockedWorld();
  const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: items(2) });
  await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
  const [message] = await w.work.receive(32, 600);
  if (message === undefined) throw new Error("no work message");
  const delivery = (dequeueCount: number) => ({ id: message.id, dequeueCount, maxDequeueCount: 5 });
  const frozen = processWorkMessage(w.deps, message.text, delivery(1));
  await vi.waitFor(() => expect(w.counts.running).toBe(2));
  return { w, id, message, delivery, frozen };
}

/** A world whose kind sums its items, under a global concurrency limit of 2; each item waits for `release`. */
function blockedWorld() {
  const clock = { ms: 1_000_000 };
  const counts = { running: 0, most: 0, calls: 0 };
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const kind = defineTaskKind({
    name: "sum",
    concurrency: 4,
    limits: { concurrency: 2 },
    process: async (input) => {
      counts.calls++;
      counts.running++;
      counts.most = Math.max(counts.most, counts.running);
      await held;
      counts.running--;
      return Number(input.text);
    },
    aggregate: { empty: () => 0, merge: (a: number, b: number) => a + b },
  });
  const w = world({
    registry: new TaskRegistry([kind]),
    now: () => clock.ms,
    dispatchBatchSize: 1000,
    maxInFlight: 1000,
    workUnitMaxItems: 1000,
  });
  return { ...w, clock, counts, release: () => release() };
}

const items = (count: number) => Array.from({ length: count }, (_, item) => ({ inline: String(item + 1) }));

describe("copies of a granted unit never run its grant twice (issue 42)", () => {
  it("a unit on the queue twice (a send the SDK retried): the copy that claims the grant first runs it, the other starts nothing", async () => {
    const w = blockedWorld();
    const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: items(2) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const [body] = w.work.bodies();
    await w.work.send([body ?? ""]);
    const copies = await w.work.receive(32, 600);
    expect(copies).toHaveLength(2);
    const runs = copies.map((copy) =>
      processWorkMessage(w.deps, JSON.parse(copy.text ?? "null") as unknown, {
        id: copy.id,
        dequeueCount: 1,
        maxDequeueCount: 5,
      }),
    );
    const settled: WorkOutcome[] = [];
    void runs[1]?.then((outcome) => settled.push(outcome));
    // Either the second copy has settled without running anything, or both copies run their items.
    await vi.waitFor(() =>
      expect(w.counts.running === 4 || (settled.length === 1 && w.counts.running === 2)).toBe(true),
    );
    w.release();
    const outcomes = await Promise.all(runs);
    expect(w.counts.most).toBe(2);
    expect(w.counts.calls).toBe(2);
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(["copy", "processed"]);
    for (const copy of copies) await w.work.delete(copy);
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const job = await readJob(w.state, id);
    expect(job?.status).toBe("completed");
    expect(job?.aggregate).toBe(3);
  });

  it("a delivery after the one that claimed the grant, while that one is frozen (past the message's visibility), starts nothing: the unit goes back held, and runs again under a new grant once the old one expires", async () => {
    // Found by the simulator (seed 20261646, limitsNeverExceeded: "pool k:group-by (concurrency 1) had 2 items
    // running"): the redelivery ran under the claimant's grant, after a rate window, while the frozen claimant ran it.
    const { w, id, message, delivery, frozen } = await frozenClaimant();
    // The first delivery froze; the host delivers the message again.
    const again = await processWorkMessage(w.deps, message.text, delivery(2));
    expect(again.status).toBe("regranted");
    await w.work.delete(message); // the second delivery returned: the host deletes the message
    expect(w.counts).toMatchObject({ running: 2, most: 2, calls: 2 });
    // The leader holds the grant's shares until it expires (and its grace): nothing of the unit is sent meanwhile.
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(w.work.bodies()).toEqual([]);
    w.clock.ms += GRANT_LIFETIME_MS + GRANT_GRACE_MS;
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(w.work.bodies()).toHaveLength(1); // sent again, under a new grant
    // The frozen delivery thaws: it had started its items before its grant expired, and reports them.
    w.release();
    expect((await frozen).status).toBe("processed");
    await work(w.deps, w.work);
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(w.counts.most).toBe(2);
    expect(await readJob(w.state, id)).toMatchObject({ status: "completed", doneCount: 2, aggregate: 3 });
  });

  it("a frozen claimant that thaws and reports frees its grant's shares at once, though a later delivery had given the grant back held", async () => {
    const { w, id, message, delivery, frozen } = await frozenClaimant();
    expect((await processWorkMessage(w.deps, message.text, delivery(2))).status).toBe("regranted");
    await w.work.delete(message);
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS); // the grant ends held, to its expiry
    expect(useByPool(await ledgerOf(w), w.clock.ms).get("k:sum")?.running).toBe(2);
    w.release(); // the claimant thaws and reports
    expect((await frozen).status).toBe("processed");
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(w.state, id)).toMatchObject({ status: "completed", doneCount: 2, aggregate: 3 });
    expect(useByPool(await ledgerOf(w), w.clock.ms).get("k:sum")?.running ?? 0).toBe(0);
  });

  it("a unit whose deliveries die while running it (an item that kills its process) fails after MAX_LOST_DELIVERIES, instead of holding its pool a grant's lifetime for ever", async () => {
    // Found by the simulator once later deliveries stopped running under a claimed grant (seeds 20261146, 20261690:
    // limitedJobsEnd, jobs with an item that kills its process never ended).
    const w = blockedWorld(); // never released: each delivery that runs the items dies with them
    const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: items(2) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    for (let lost = 1; lost <= MAX_LOST_DELIVERIES; lost++) {
      const [message] = await w.work.receive(32, 600);
      if (message === undefined) throw new Error(`no work message for delivery ${lost}`);
      const delivery = (dequeueCount: number) => ({ id: message.id, dequeueCount, maxDequeueCount: 5 });
      void processWorkMessage(w.deps, message.text, delivery(1)); // its process dies with the items running
      await vi.waitFor(() => expect(w.counts.running).toBe(2 * lost));
      expect((await processWorkMessage(w.deps, message.text, delivery(2))).status).toBe("regranted");
      await w.work.delete(message);
      await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS); // folds the give-back
      w.clock.ms += GRANT_LIFETIME_MS + GRANT_GRACE_MS; // the earlier delivery's grant is held to its expiry
      await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    }
    const job = await readJob(w.state, id);
    expect(job).toMatchObject({ status: "completed", doneCount: 0, failedCount: 2 });
    expect(job?.failures[0]?.reason).toMatch(/process died or froze .*an item may be killing its process/);
  });

  it("a granted unit whose item fails transiently is retried by the host under its grant, as any unit: its claim released, the next delivery runs it", async () => {
    // Found by the simulator (seed 20261690, limitedJobsEnd): a run that failed went back to the leader each time, with
    // a new grant and a new message, so the host's delivery count never grew; an item failing on every try was run 20
    // grants long instead of the host's maxDequeueCount, holding its pool.
    const clock = { ms: 1_000_000 };
    let calls = 0;
    const flaky = defineTaskKind({
      name: "sum",
      concurrency: 2,
      limits: { concurrency: 2 },
      process(input) {
        if (input.text === "2" && ++calls === 1) throw new Error("a transient failure (test)");
        return Promise.resolve(Number(input.text));
      },
      aggregate: { empty: () => 0, merge: (a: number, b: number) => a + b },
    });
    const w = world({ registry: new TaskRegistry([flaky]), now: () => clock.ms, workUnitMaxItems: 4 });
    const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: items(2) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const [message] = await w.work.receive(32, 600);
    if (message === undefined) throw new Error("no work message");
    const delivery = (dequeueCount: number) => ({ id: message.id, dequeueCount, maxDequeueCount: 5 });
    await expect(processWorkMessage(w.deps, message.text, delivery(1))).rejects.toThrow(/a transient failure/);
    expect(w.results.bodies()).toEqual([]); // nothing reported: the host retries it
    expect(await processWorkMessage(w.deps, message.text, delivery(2))).toMatchObject({ status: "processed" });
    await w.work.delete(message);
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(w.state, id)).toMatchObject({ status: "completed", doneCount: 2, aggregate: 3 });
  });

  it("a grant that expires unreported after its claimant sent its report (the report was lost on its way) does not make the unit's next grant longer", async () => {
    // Found by the simulator (seed 20261282, limitedJobsEnd): a unit's results were damaged on their way twice; the
    // first expiry doubled the next grant's lifetime, and the job outlived its bound.
    const w = blockedWorld();
    w.release();
    await storeSubmission(w.deps.system, { kind: "sum", params: null, items: items(2) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const [message] = await w.work.receive(32, 600);
    if (message === undefined) throw new Error("no work message");
    await processWorkMessage(w.deps, message.text, { id: message.id, dequeueCount: 1, maxDequeueCount: 5 });
    await w.work.delete(message);
    for (const lost of await w.results.receive(32, 600)) await w.results.delete(lost); // the report never arrives
    w.clock.ms += GRANT_LIFETIME_MS + GRANT_GRACE_MS;
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const again = w.work.bodies().map((body) => JSON.parse(body) as { grant: { expiresAtMs: number } });
    expect(again.map((unit) => unit.grant.expiresAtMs - w.clock.ms)).toEqual([GRANT_LIFETIME_MS]);
  });

  it("a delivery after the claimant reported the unit (its message's delete failed) starts nothing: the leader may have given the grant's shares to another unit", async () => {
    // The other hole the simulator's limitsNeverExceeded found (seed 20261761): the message came back after its result
    // was folded, and ran again under a grant the leader had taken back.
    const w = blockedWorld();
    w.release();
    const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: items(2) });
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
    const [message] = await w.work.receive(32, 600);
    if (message === undefined) throw new Error("no work message");
    const delivery = (dequeueCount: number) => ({ id: message.id, dequeueCount, maxDequeueCount: 5 });
    expect((await processWorkMessage(w.deps, message.text, delivery(1))).status).toBe("processed");
    await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS); // folded: the grant's shares are free
    const again = await processWorkMessage(w.deps, message.text, delivery(2));
    expect(again).toMatchObject({ status: "copy", reason: "an earlier delivery reported it" });
    expect(w.counts.calls).toBe(2);
    expect(await readJob(w.state, id)).toMatchObject({ status: "completed", doneCount: 2, aggregate: 3 });
  });

  it("a shutdown on the unit's last delivery as its result is sent sends it back to the leader: it runs again, no item lost", async () => {
    // Found by the simulator (`npm run simulate -- --seed 20261301`, noDoneItemFailedLater): the worker put a copy of
    // the message on the queue (issue 37's resend on a last delivery), but the copy is a new message, and the grant's
    // claim names the first one's id: the copy found the claim taken, started nothing and reported nothing, and the
    // unit waited for its grant to expire (10 min) — long enough for an item a forged result had held to fail.
    const s = shutdownWorld();
    const id = await s.submit();
    const outcome = await s.deliverLastAndShutDown();
    expect(outcome.status).not.toBe("processed");
    expect(await s.runOn(id)).toMatchObject({ status: "completed", doneCount: 2, failedCount: 0, aggregate: 3 });
  });

  it("a unit shut down again and again gets grants of the first one's lifetime, and its items do not fail for it", async () => {
    // Found by the simulator (seed 20261444, limitedJobsEnd): every give-back counted as an expiry, so the lifetime
    // doubled with each shutdown (the fourth grant lasted 80 minutes, holding its pool that long when its result was
    // lost), and five shutdowns failed the unit's items "each of which expired before it finished".
    const s = shutdownWorld();
    const id = await s.submit();
    for (let shutdown = 0; shutdown <= MAX_EXPIRIES; shutdown++) {
      const outcome = await s.deliverLastAndShutDown();
      expect(outcome.status).toBe("regranted");
      expect(s.lastGrantMs).toBe(GRANT_LIFETIME_MS);
      await runCoordinationStep(s.w.deps, fakeTerm(1), ONE_PASS); // folds the give-back, grants the unit again
    }
    expect(await readJob(s.w.state, id)).toMatchObject({ status: "running", failedCount: 0 });
    expect(await s.runOn(id)).toMatchObject({ status: "completed", doneCount: 2, failedCount: 0, aggregate: 3 });
  });
});

/**
 * A world whose kind sums a unit of two items under a global concurrency limit of 2, and whose host can shut down as a
 * unit's last item finishes, on the message's last delivery.
 */
function shutdownWorld() {
  let shutdown: AbortController | undefined;
  const clock = { ms: 1_000_000 };
  const sums = defineTaskKind({
    name: "sum",
    concurrency: 2, // one unit of both items (a unit of a pool limited to 2 carries what its share runs at once)
    limits: { concurrency: 2 },
    process(input) {
      // The host shuts down as the unit's last item finishes.
      if (input.text === "2") shutdown?.abort(new Error("host shutting down"));
      return Promise.resolve(Number(input.text));
    },
    aggregate: { empty: () => 0, merge: (a: number, b: number) => a + b },
  });
  const w = world({ registry: new TaskRegistry([sums]), now: () => clock.ms, workUnitMaxItems: 4 });
  // As the Storage SDK does, a send whose abort signal has fired is not made.
  const send = w.deps.resultsQueue.send.bind(w.deps.resultsQueue);
  w.deps.resultsQueue.send = (texts, options) =>
    options?.abortSignal?.aborted === true ? Promise.reject(abortReason(options.abortSignal)) : send(texts, options);
  const world_ = {
    w,
    /** The lifetime of the grant of the last unit delivered, in ms. */
    lastGrantMs: 0,
    async submit(): Promise<string> {
      const { id } = await storeSubmission(w.deps.system, { kind: "sum", params: null, items: items(2) });
      await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
      return id;
    },
    /** Delivers the unit on its last delivery; the host shuts down as its items end, then deletes the message. */
    async deliverLastAndShutDown(): Promise<WorkOutcome> {
      const [message, other] = await w.work.receive(2, 30);
      if (message === undefined || other !== undefined) throw new Error("not one work message of both items");
      const body = JSON.parse(message.text ?? "null") as { grant: { expiresAtMs: number } };
      world_.lastGrantMs = body.grant.expiresAtMs - clock.ms;
      shutdown = new AbortController();
      const outcome = await processWorkMessage(
        w.deps,
        message.text,
        { id: message.id, dequeueCount: 5, maxDequeueCount: 5 },
        { abortSignal: shutdown.signal },
      );
      shutdown = undefined;
      await w.work.delete(message); // the delivery returned: the host deletes the message
      return outcome;
    },
    /** A later instance, running on: the leader folds and sends, workers process what is on the queue. */
    async runOn(id: string) {
      for (let round = 0; round < 3; round++) {
        await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
        await work(w.deps, w.work);
      }
      await runCoordinationStep(w.deps, fakeTerm(1), ONE_PASS);
      return readJob(w.state, id);
    },
  };
  return world_;
}

/** The grant ledger as stored. */
async function ledgerOf(w: { state: { read(key: string): Promise<{ value: unknown } | undefined> } }) {
  const stored = await w.state.read(LEDGER_KEY);
  return ledgerSchema.parse(stored?.value ?? { v: 1, grants: [] });
}
