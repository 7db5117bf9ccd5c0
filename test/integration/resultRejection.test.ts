import { describe, expect, it } from "vitest";
import { runCoordinatorTick, submitJob } from "../../src/app/operations";
import { useAzurite } from "../support/azuriteFixture";
import { newTestApp } from "../support/inProcessApp";

const params = { format: "csv", keyField: "region", valueField: "amount" } as const;

/**
 * The leader's rejection of a result message on Azurite, with its real limits (64 KiB a message, 413 beyond): a
 * message the leader cannot use ends in the results poison queue with the reason, and never fails the step — the
 * results queue has no delivery limit, so a step that failed on a message would fail on it every 30 s, for ever.
 */
describe("the leader's rejection of a result message, on Azurite", () => {
  const env = useAzurite();

  /**
   * A test app with a job of one item (registered at the first tick), a result message on its results queue (made
   * for the job's id), and `rounds` ticks run: what failed, and what the results poison queue then holds.
   */
  async function tickOver(result: (jobId: string) => string, rounds = 1) {
    const { app, sink } = newTestApp(env.azurite.connectionString);
    const item = { inline: "region,amount\neu,1" };
    const job = await submitJob(app, { kind: "group-by", params, items: [item] }, { wake: false });
    if (!job.ok) throw new Error(JSON.stringify(job.errors));
    await app.resultsQueue.send([result(job.id)]);
    const errors: string[] = [];
    for (let round = 0; round < rounds; round++) {
      try {
        await runCoordinatorTick(app, sink);
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error));
      }
    }
    const poisoned = await app.resultsPoisonQueue.peek(32);
    const rejection: unknown = JSON.parse(poisoned[0]?.text ?? "{}");
    return { errors, poisoned, rejection };
  }

  it("a rejected result of ~40 KB (here: its job does not exist) still ends in the results poison queue; no step fails", async () => {
    // What a worker sends for a unit with many groups (its inline limit is 40 KiB of JSON), for a job that is gone.
    const partial = Array.from({ length: 1200 }, (_, i) => [`group-${String(i).padStart(6, "0")}`, 1, "1000000", 1, 1]);
    const jobId = "00000000-0000-4000-8000-000000000000";
    const result = JSON.stringify({ v: 2, jobId, first: 0, count: 1, done: [[0, 0]], partial });
    expect(Buffer.byteLength(result)).toBeLessThan(40 * 1024);
    const { errors, poisoned, rejection } = await tickOver(() => result);
    expect({ errors, poison: poisoned.length }).toEqual({ errors: [], poison: 1 });
    expect(rejection).toMatchObject({ rejected: { by: "leader", reason: `no job "${jobId}"` } });
  });

  for (const outcomeBlob of ["", "/", "a".repeat(1100), "x/../../other", "%", "jobs/other/partials/0.json"]) {
    const shown = `${JSON.stringify(outcomeBlob.slice(0, 26))}${outcomeBlob.length > 26 ? "…" : ""}`;
    it(`a result naming outcomeBlob ${shown}, not the blob its worker writes, is rejected with the reason; no step fails`, async () => {
      const { errors, poisoned, rejection } = await tickOver(
        (jobId) => JSON.stringify({ v: 2, jobId, first: 0, count: 1, outcomeBlob }),
        2,
      );
      expect({ errors, poison: poisoned.length }).toEqual({ errors: [], poison: 1 });
      expect(rejection).toMatchObject({
        rejected: { reason: expect.stringMatching(/^its outcomeBlob .* is not the blob its worker writes/) as unknown },
      });
    });
  }
});
