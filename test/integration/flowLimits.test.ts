import { describe, expect, it } from "vitest";
import { getJobStatus, submitJob } from "../../src/app/operations";
import { LEDGER_KEY, ledgerSchema, useByPool } from "../../src/coordination/state/grantLedger";
import { useAzurite } from "../support/azuriteFixture";
import { newTestApp, runUntilComplete } from "../support/inProcessApp";

describe("flow control on Azurite: a limited job's grants in the stored ledger, its units on the real queue (issue 42)", () => {
  const env = useAzurite();

  it("a job with its own limits completes with the exact aggregate; every grant was written down and given back", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString, { WORK_UNIT_MAX_ITEMS: "4" });
    const items = Array.from({ length: 30 }, (_, i) => ({ inline: `region,amount\neu,${i}\nus,1` }));
    const submitted = await submitJob(app, {
      kind: "group-by",
      params: { format: "csv", keyField: "region", valueField: "amount" },
      items,
      limits: { concurrency: 2, rate: { limit: 100, periodSeconds: 1 } },
    });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, submitted.id))?.status === "completed");
    const status = await getJobStatus(app, submitted.id);
    expect(status).toMatchObject({ status: "completed", progress: { total: 30, done: 30, failed: 0 } });
    expect(status?.aggregate).toEqual({
      eu: { count: 30, sum: (30 * 29) / 2, min: 0, max: 29 },
      us: { count: 30, sum: 30, min: 1, max: 1 },
    });
    const stored = await app.state.read(LEDGER_KEY);
    const ledger = ledgerSchema.parse(stored?.value);
    const pool = `j:${submitted.id}`;
    expect(ledger.grants.filter((grant) => grant.jobId === submitted.id).length).toBeGreaterThan(1);
    expect(ledger.grants.every((grant) => grant.endedAtMs !== undefined)).toBe(true);
    expect(useByPool(ledger, Date.now()).get(pool)?.running ?? 0).toBe(0);
    expect(ledger.limits[pool]).toEqual({
      concurrency: 2,
      rate: { limit: 100, periodMs: 1000, permits: 100, windowMs: 1000 },
    });
  });
});
