import { describe, expect, it } from "vitest";
import { cancelJob, coordinationDeps, getJobStatus, submitJob } from "../../src/app/operations";
import { keys } from "../../src/coordination/state/jobState";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { useAzurite } from "../support/azuriteFixture";
import { newTestApp, runUntilComplete } from "../support/inProcessApp";

/**
 * Issue 21, item 5, on Azurite: once an ended job has been ended for JOB_RETENTION_HOURS, a leader's step removes
 * every blob of it — in the system container (spec, chunks, outcome blobs, markers) and its state document — and its
 * status answers 404 (`getJobStatus` undefined). Until then it reads as before.
 */
describe("retention of ended jobs on Azurite", () => {
  const env = useAzurite();
  const HOUR_MS = 3_600_000;

  it("a completed job with outcome blobs, and a cancelled job, are removed whole after their retention, not before", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString, { JOB_RETENTION_HOURS: "2" });
    const csv = Array.from({ length: 2000 }, (_, g) => `region-${String(g).padStart(5, "0")},1`).join("\n");
    const done = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items: [{ inline: `region,amount\n${csv}` }, { inline: "region,amount\neu,1" }],
    });
    const cancelled = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items: [{ inline: "region,amount\neu,2" }],
    });
    if (!done.ok || !cancelled.ok) throw new Error("submission refused");
    await cancelJob(app, cancelled.id);
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, done.id))?.status === "completed");
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, cancelled.id))?.status === "cancelled");
    // One more step takes both off the active list (and writes their retention markers).
    const step = (nowMs: number) =>
      app.elector.tryLead((term) =>
        runCoordinationStep({ ...coordinationDeps(app, sink), now: () => nowMs }, term, { budgetMs: 1000 }),
      );
    await step(Date.now());
    expect(await app.system.list(`jobs/${done.id}/outcomes/`, 10)).toHaveLength(1);
    expect(await app.system.list(keys.endedPrefix, 10)).toHaveLength(2);

    const systemBlobs = async (id: string) => (await app.system.list(`jobs/${id}/`, 1000)).length;
    expect(await systemBlobs(done.id)).toBeGreaterThanOrEqual(3); // spec, chunk, outcome
    expect(await step(Date.now() + HOUR_MS)).toMatchObject({ outcome: "completed", value: { removedJobs: 0 } });
    expect((await getJobStatus(app, done.id))?.status).toBe("completed");

    expect(await step(Date.now() + 3 * HOUR_MS)).toMatchObject({ outcome: "completed", value: { removedJobs: 2 } });
    for (const id of [done.id, cancelled.id]) {
      expect(await getJobStatus(app, id)).toBeUndefined();
      expect(await systemBlobs(id)).toBe(0);
      expect(await app.state.readSummary(keys.jobState(id))).toBeUndefined();
    }
    expect(await app.system.list(keys.endedPrefix, 10)).toEqual([]);
    expect(await app.system.list(keys.cancelPrefix, 10)).toEqual([]);
  });
});
