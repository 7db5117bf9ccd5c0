import { describe, expect, it } from "vitest";
import { cancelJob, getJobStatus, submitJob } from "../../src/app/jobs";
import { delay } from "../../src/library/util/delay";
import { useAzurite } from "../support/azuriteFixture";
import { drainWorkQueue, newTestApp } from "../support/inProcessApp";
import { runCoordinatorTick } from "../../src/app/operations";

const params = { format: "csv", keyField: "region", valueField: "amount" };
const items = (n: number): { inline: string }[] =>
  Array.from({ length: n }, (_, i) => ({ inline: `region,amount\n${i % 2 === 0 ? "eu" : "us"},${i}` }));

/**
 * One item per work message, so messages and items count alike here (units with cancel: test/unit/workUnits.test.ts).
 */
const PER_ITEM = { DISPATCH_BATCH_SIZE: "5", WORK_UNIT_MAX_ITEMS: "1" };

describe("cancel and deadline on Azurite (in process)", () => {
  const env = useAzurite();

  it("a job cancelled mid-run ends as cancelled with the rest skipped; workers drop its queued units unprocessed", async () => {
    const { app, sink, events } = newTestApp(env.azurite.connectionString, PER_ITEM);
    const submitted = await submitJob(app, { kind: "group-by", params, items: items(40) });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    const { id } = submitted;
    await runCoordinatorTick(app, sink); // registers and dispatches 5 per pass, up to 10 in flight
    const dispatched = (await getJobStatus(app, id))?.progress.dispatched ?? 0;
    expect(dispatched).toBeGreaterThanOrEqual(5);
    expect(await drainWorkQueue(app, sink, 4)).toBe(4);
    expect(await cancelJob(app, id)).toEqual({ outcome: "requested", id, wakeUp: "sent" });
    expect(await getJobStatus(app, id)).toMatchObject({ status: "running", cancelRequested: true });
    // The request also woke the coordinator (one message on the wake queue), as a submission does.
    const wakes = (await app.wakeQueue.receive(32, 1)).map(
      (message) => JSON.parse(message.text ?? "{}") as { reason?: string; jobId?: string },
    );
    expect(wakes).toContainEqual(expect.objectContaining({ reason: "job-cancel-requested", jobId: id }));
    await runCoordinatorTick(app, sink);
    const cancelled = await getJobStatus(app, id);
    expect(cancelled).toMatchObject({
      status: "cancelled",
      progress: { total: 40, dispatched, done: 4, failed: 0, skipped: 36 },
    });
    expect(events.filter((e) => e.type === "job-cancelled")).toEqual([
      expect.objectContaining({ jobId: id, done: 4, failed: 0, skipped: 36 }),
    ]);
    expect(await app.system.list("cancel/", 10)).toEqual([]);

    // The units still queued are taken and dropped: the workers read the job's stop blob and process none of them.
    expect(await drainWorkQueue(app, sink)).toBe(dispatched - 4);
    await runCoordinatorTick(app, sink);
    expect(await getJobStatus(app, id)).toEqual(cancelled);
    expect(events.filter((e) => e.type === "step-completed").reduce((n, e) => n + e.discarded, 0)).toBe(0);
    expect(await app.resultsQueue.receive(32, 1)).toEqual([]);
    expect(await app.workQueue.receive(32, 1)).toEqual([]);
    expect(await cancelJob(app, id)).toEqual({ outcome: "ended", status: "cancelled" });
    expect(await cancelJob(app, "no-such-job")).toEqual({ outcome: "not-found" });
  });

  it("a job whose deadline passes ends as expired with its counts; results after that are not counted", async () => {
    const { app, sink, events } = newTestApp(env.azurite.connectionString, PER_ITEM);
    const submitted = await submitJob(app, { kind: "group-by", params, items: items(20), timeoutS: 6 });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    const { id } = submitted;
    await runCoordinatorTick(app, sink);
    expect(await drainWorkQueue(app, sink, 3)).toBe(3);
    await runCoordinatorTick(app, sink);
    const running = await getJobStatus(app, id);
    expect(running).toMatchObject({ status: "running", progress: { done: 3 } });
    // Wait past the deadline (the leader reads the wall clock at its next step).
    await delay(Math.max(0, Date.parse(running?.deadline ?? "") - Date.now() + 100));
    await runCoordinatorTick(app, sink);
    const expired = await getJobStatus(app, id);
    const dispatched = expired?.progress.dispatched ?? 0;
    expect(expired).toMatchObject({ status: "expired", progress: { total: 20, done: 3, failed: 0, skipped: 17 } });
    expect(events.filter((e) => e.type === "job-expired")).toEqual([
      expect.objectContaining({ jobId: id, done: 3, skipped: 17 }),
    ]);
    expect(await drainWorkQueue(app, sink)).toBe(dispatched - 3);
    await runCoordinatorTick(app, sink);
    expect(await getJobStatus(app, id)).toEqual(expired);
  });
});
