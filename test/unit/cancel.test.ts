import { describe, expect, it } from "vitest";
import { createRegistry } from "../../scripts/support/repoKinds";
import { requestCancel } from "../../src/coordination/jobs/cancel";
import { keys } from "../../src/coordination/state/jobState";
import { readJobStatus } from "../../src/coordination/jobs/status";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { MAX_DEADLINE_S, storeSubmission, validateSubmission } from "../../src/coordination/jobs/submit";
import { StorageError } from "../../src/library/errors";
import { ONE_PASS, item, params, readJob, unawareOfStops, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

const items = (n: number): { inline: string }[] => Array.from({ length: n }, (_, i) => item(`k${i % 3}`, i));

describe("cancelling a job (unit, in-memory ports)", () => {
  it("cancel mid-job: the leader ends the job as cancelled at its next step, counts the rest as skipped and dispatches nothing more", async () => {
    const { deps, events, work: queue, state } = world({ dispatchBatchSize: 10, maxInFlight: 10 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(30) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue, deps, 4); // 4 of the 10 dispatched items are done; 6 are still queued
    expect(await requestCancel(deps, id)).toEqual({ outcome: "requested", id });
    expect(await readJob(state, id)).toMatchObject({ status: "running" }); // a request, not the leader's state
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(report.dispatched).toBe(0);
    expect(await readJob(state, id)).toMatchObject({
      status: "cancelled",
      doneCount: 4,
      failedCount: 0,
      skippedCount: 26,
      dispatched: 10,
    });
    expect(events.filter((e) => e.type === "job-cancelled")).toEqual([
      expect.objectContaining({ jobId: id, done: 4, failed: 0, skipped: 26 }),
    ]);
    expect(events.some((e) => e.type === "job-completed")).toBe(false);
    expect(await deps.system.list("cancel/", 10)).toEqual([]); // the request was applied and removed
    const status = await readJobStatus(deps.state, deps.system, deps.registry, id);
    expect(status).toMatchObject({
      status: "cancelled",
      progress: { total: 30, dispatched: 10, done: 4, failed: 0, skipped: 26 },
    });
    expect(status?.endedAt).toBeDefined();
  });

  it("late results after cancel are acknowledged and not counted; the job stays cancelled", async () => {
    const { deps, work: queue, results, poison, state } = world({ dispatchBatchSize: 10, maxInFlight: 10 });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(20) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue, deps, 3);
    await requestCancel(deps, id);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const cancelled = await readJob(state, id);
    // The queued work still runs on a worker that does not know (see unawareOfStops), and one item is poisoned.
    const [poisoned] = await queue.receive(1, 60);
    if (poisoned === undefined) throw new Error("expected a queued work message");
    await poison.send([poisoned.rawText]);
    await queue.delete(poisoned);
    expect(await work(deps, queue, { ...deps, jobStops: unawareOfStops })).toBe(6);
    const report = await runCoordinationStep(deps, fakeTerm(2), ONE_PASS);
    expect(report).toMatchObject({ discarded: 7, folded: 0, failed: 0, dispatched: 0 });
    expect(results.length).toBe(0);
    expect(poison.length).toBe(0);
    const after = await readJob(state, id);
    expect(after).toMatchObject({ status: "cancelled", doneCount: 3, failedCount: 0, skippedCount: 17 });
    expect(after?.aggregate).toEqual(cancelled?.aggregate);
  });

  it("cancel before registration: the job is registered and cancelled in the same step, with nothing dispatched", async () => {
    const { deps, events, work: queue, state } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(5) });
    expect((await readJobStatus(deps.state, deps.system, deps.registry, id))?.status).toBe("pending");
    expect(await requestCancel(deps, id)).toEqual({ outcome: "requested", id });
    expect(await readJobStatus(deps.state, deps.system, deps.registry, id)).toMatchObject({
      status: "pending",
      cancelRequested: true,
    });
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(report).toMatchObject({ registered: 1, dispatched: 0 });
    expect(queue.length).toBe(0);
    expect(await readJob(state, id)).toMatchObject({
      status: "cancelled",
      dispatched: 0,
      doneCount: 0,
      skippedCount: 5,
    });
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["job-registered", "job-cancelled"]));
    expect(await deps.system.list("", 100)).not.toContain(keys.inbox(id));
  });

  it("double cancel: a second request before the leader applies the first is accepted; after it, the job has ended (one event)", async () => {
    const { deps, events } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(3) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await requestCancel(deps, id)).toEqual({ outcome: "requested", id });
    expect(await requestCancel(deps, id)).toEqual({ outcome: "requested", id });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await requestCancel(deps, id)).toEqual({ outcome: "ended", status: "cancelled" });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(events.filter((e) => e.type === "job-cancelled")).toHaveLength(1);
    expect(await deps.system.list("cancel/", 10)).toEqual([]);
  });

  it("cancelling an unknown job is not-found; a completed job has ended and stays completed", async () => {
    const { deps, work: queue, state } = world();
    expect(await requestCancel(deps, "no-such-job")).toEqual({ outcome: "not-found" });
    expect(await requestCancel(deps, "../Not An Id")).toEqual({ outcome: "not-found" });
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(2) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await requestCancel(deps, id)).toEqual({ outcome: "ended", status: "completed" });
    expect(await readJob(state, id)).toMatchObject({ status: "completed", doneCount: 2 });
    expect(await deps.system.list("cancel/", 10)).toEqual([]);
  });
});

describe("cancelling a job this version cannot read (unit, in-memory ports)", () => {
  it("a job whose state blob is damaged (not JSON) is unreadable, with the state store's reason, and nothing is stored", async () => {
    const { deps, state } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(1) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const damaged = {
      read: (key: string) =>
        key === keys.jobState(id)
          ? Promise.reject(new StorageError("CorruptState", undefined, `State ${key} is not valid JSON (simulated)`))
          : state.read(key),
      readSummary: state.readSummary.bind(state),
      delete: state.delete.bind(state),
      write: state.write.bind(state),
    };
    expect(await requestCancel({ ...deps, state: damaged }, id)).toEqual({
      outcome: "unreadable",
      reason: `its state is damaged: State ${keys.jobState(id)} is not valid JSON (simulated)`,
    });
    expect(await deps.system.list("cancel/", 10)).toEqual([]);
  });
});

describe("a cancellation request for a job whose state cannot be read", () => {
  it("is kept for later and reported (job-pass-failed); the other requests are applied and the step goes on with the other jobs", async () => {
    const { deps, events, state } = world({ dispatchBatchSize: 10, maxInFlight: 1000 });
    const good = await storeSubmission(deps.system, { kind: "group-by", params, items: items(40) });
    const bad = await storeSubmission(deps.system, { kind: "group-by", params, items: items(2) });
    const other = await storeSubmission(deps.system, { kind: "group-by", params, items: items(2) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    // Both requests were accepted while the jobs could be read; the leader has not applied them yet.
    expect(await requestCancel(deps, bad.id)).toMatchObject({ outcome: "requested" });
    expect(await requestCancel(deps, other.id)).toMatchObject({ outcome: "requested" });
    // Then a newer leader wrote the bad job's state with a status this version does not know.
    const stored = await state.read(keys.jobState(bad.id));
    if (stored === undefined) throw new Error("not registered");
    await state.write(keys.jobState(bad.id), { ...(stored.value as object), status: "paused" }, 1, {
      ifMatch: stored.etag,
    });
    const before = (await readJob(state, good.id))?.dispatched ?? 0;
    for (let step = 0; step < 3; step++) {
      const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
      // Each pass, a job error for the bad job (its dispatch could not read it); and one more for its request, kept,
      // each time the step lists the requests: its first pass (then at most once a second, LIST_INTERVAL_MS).
      expect(report.jobErrors).toBe(report.passes + 1);
    }
    expect((await readJob(state, good.id))?.dispatched).toBeGreaterThan(before);
    expect(await readJob(state, other.id)).toMatchObject({ status: "cancelled" });
    expect(await deps.system.list("cancel/", 10)).toEqual([keys.cancel(bad.id)]);
    expect(events).toContainEqual(
      expect.objectContaining({
        type: "job-pass-failed",
        jobId: bad.id,
        error: expect.stringMatching(/cancellation request .* kept for later: .*status/) as unknown,
      }),
    );
  });

  it("losing leadership while applying requests still ends the step", async () => {
    const { deps } = world();
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: items(2) });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await requestCancel(deps, id);
    const term = fakeTerm(1);
    const read = deps.state.read.bind(deps.state);
    const state = {
      read: (key: string) => {
        if (key === keys.jobState(id)) term.end(); // the term ends while the request is applied
        return read(key);
      },
      readSummary: deps.state.readSummary.bind(deps.state),
      delete: deps.state.delete.bind(deps.state),
      write: deps.state.write.bind(deps.state),
    };
    await expect(runCoordinationStep({ ...deps, state }, term, ONE_PASS)).rejects.toThrow(/term \(epoch 1\) is over/);
    expect(await deps.system.list("cancel/", 10)).toEqual([keys.cancel(id)]);
  });
});

describe("job deadlines (unit, in-memory ports)", () => {
  it("a job whose deadline passes ends as expired with its counts and a job-expired event; late results are not counted", async () => {
    let nowMs = 1_000;
    const {
      deps,
      events,
      work: queue,
      results,
      state,
    } = world({ dispatchBatchSize: 5, maxInFlight: 5, now: () => nowMs });
    const { id } = await storeSubmission(
      deps.system,
      { kind: "group-by", params, items: items(12), timeoutS: 60 },
      { now: () => nowMs },
    );
    expect((await readJobStatus(deps.state, deps.system, deps.registry, id))?.deadline).toBe(
      new Date(61_000).toISOString(),
    );
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue, deps, 2);
    nowMs = 30_000; // before the deadline: the job goes on
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, id)).toMatchObject({ status: "running", doneCount: 2, dispatched: 7 });
    await work(deps, queue, deps, 3);
    nowMs = 61_001; // past it
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    const expired = await readJob(state, id);
    expect(expired).toMatchObject({ status: "expired", doneCount: 5, failedCount: 0, skippedCount: 7, dispatched: 7 });
    expect(events.filter((e) => e.type === "job-expired")).toEqual([
      expect.objectContaining({ jobId: id, done: 5, failed: 0, skipped: 7 }),
    ]);
    expect(await work(deps, queue, { ...deps, jobStops: unawareOfStops })).toBe(2); // the two still queued
    const report = await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(report).toMatchObject({ discarded: 2, folded: 0, dispatched: 0 });
    expect(results.length).toBe(0);
    expect(await readJob(state, id)).toMatchObject({ status: "expired", doneCount: 5, skippedCount: 7 });
    expect(await requestCancel(deps, id)).toEqual({ outcome: "ended", status: "expired" });
    expect((await readJobStatus(deps.state, deps.system, deps.registry, id))?.status).toBe("expired");
  });

  it("a job whose deadline passed before any leader registered it expires at registration, with nothing dispatched", async () => {
    let nowMs = 1_000;
    const { deps, work: queue, state } = world({ now: () => nowMs });
    const { id } = await storeSubmission(
      deps.system,
      { kind: "group-by", params, items: items(4), deadline: new Date(5_000).toISOString() },
      { now: () => nowMs },
    );
    nowMs = 5_001;
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(queue.length).toBe(0);
    expect(await readJob(state, id)).toMatchObject({ status: "expired", skippedCount: 4, dispatched: 0 });
  });

  it.each([
    ["a deadline in the past", { deadline: new Date(500).toISOString() }, "deadline", /must be in the future/],
    [
      "a deadline too far ahead",
      { deadline: new Date(1_000 + (MAX_DEADLINE_S + 1) * 1000).toISOString() },
      "deadline",
      /at most 7 days/,
    ],
    ["a deadline that is not an ISO time", { deadline: "tomorrow" }, "deadline", /ISO/i],
    ["a zero timeout", { timeoutS: 0 }, "timeoutS", /./],
    ["a timeout over 7 days", { timeoutS: MAX_DEADLINE_S + 1 }, "timeoutS", /./],
    ["both a deadline and a timeout", { deadline: new Date(9_000).toISOString(), timeoutS: 5 }, "deadline", /either/],
  ])("refuses a submission with %s, naming the field", (_name, extra, field, message) => {
    const result = validateSubmission({ kind: "group-by", params, items: items(1), ...extra }, createRegistry(), 1_000);
    expect(result.ok).toBe(false);
    const errors = result.ok ? [] : result.errors;
    expect(errors.find((e) => e.field === field)?.message).toMatch(message);
  });

  it("accepts a deadline with a time-zone offset and a timeout up to 7 days", () => {
    expect(
      validateSubmission(
        { kind: "group-by", params, items: items(1), deadline: "1970-01-01T02:00:05+02:00" },
        createRegistry(),
        1_000,
      ).ok,
    ).toBe(true);
    expect(
      validateSubmission(
        { kind: "group-by", params, items: items(1), timeoutS: MAX_DEADLINE_S },
        createRegistry(),
        1_000,
      ).ok,
    ).toBe(true);
  });
});
