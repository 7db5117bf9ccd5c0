import { describe, expect, it } from "vitest";
import { getJobStatus, submitJob } from "../../src/app/operations";
import { useAzurite } from "../support/azuriteFixture";
import { newTestApp, runUntilComplete } from "../support/inProcessApp";

function csvItem(rows: [string, number][]): { inline: string } {
  return { inline: ["region,amount", ...rows.map(([region, amount]) => `${region},${amount}`)].join("\n") };
}

describe("coordinator flow on Azurite (in process)", () => {
  const env = useAzurite();

  it("submits a group-by job, dispatches, folds results exactly once and completes with the right aggregate", async () => {
    const { app, sink, events } = newTestApp(env.azurite.connectionString, {
      DISPATCH_BATCH_SIZE: "7",
      WORK_UNIT_MAX_ITEMS: "2",
    });
    const items = Array.from({ length: 25 }, (_, i) =>
      csvItem([
        ["eu", i],
        ["us", 2 * i],
        [i % 2 === 0 ? "apac" : "eu", 1.5],
      ]),
    );
    const submitted = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items,
    });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    expect((await getJobStatus(app, submitted.id))?.status).toBe("pending");
    const rounds = await runUntilComplete(
      app,
      sink,
      async () => (await getJobStatus(app, submitted.id))?.status === "completed",
    );
    const status = await getJobStatus(app, submitted.id);
    expect(status).toMatchObject({ status: "completed", progress: { total: 25, dispatched: 25, done: 25, failed: 0 } });
    const sum = (n: number): number => (n * (n - 1)) / 2;
    expect(status?.aggregate).toEqual({
      eu: { count: 25 + 12, sum: sum(25) + 12 * 1.5, min: 0, max: 24 },
      us: { count: 25, sum: 2 * sum(25), min: 0, max: 48 },
      apac: { count: 13, sum: 13 * 1.5, min: 1.5, max: 1.5 },
    });
    expect(rounds).toBeGreaterThan(2); // bounded fan-out: 7 per pass, in whole units of 2 (so 8)
    expect(events.filter((e) => e.type === "job-completed")).toHaveLength(1);
    expect(events.some((e) => e.type === "step-started")).toBe(true);
  });

  it("folds units whose outcomes are in blobs (too large for a queue message), read with their size known first", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString);
    // 2,000 distinct groups an item (some 36 KB of CSV, so one item a unit): each unit's partial is some 80 KB of
    // JSON, more than a result message holds.
    const items = Array.from({ length: 4 }, (_, i) =>
      csvItem(Array.from({ length: 2000 }, (_, g): [string, number] => [`region-${String(g).padStart(5, "0")}`, i])),
    );
    const submitted = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items,
    });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, submitted.id))?.status === "completed");
    expect(await app.system.list(`jobs/${submitted.id}/outcomes/`, 10)).toHaveLength(4);
    const status = await getJobStatus(app, submitted.id);
    expect(status).toMatchObject({ status: "completed", progress: { done: 4, failed: 0 } });
    const aggregate = status?.aggregate as Record<string, { count: number; sum: number }>;
    expect(Object.keys(aggregate)).toHaveLength(2000);
    expect(aggregate["region-01999"]).toMatchObject({ count: 4, sum: 0 + 1 + 2 + 3 });
  });
});
