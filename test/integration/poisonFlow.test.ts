import { QueueClient } from "@azure/storage-queue";
import { describe, expect, it } from "vitest";
import { MAX_DEQUEUE_COUNT, type CoordinatorApp } from "../../src/app/context";
import { getJobStatus, handleWorkMessage, runCoordinatorTick, submitJob } from "../../src/app/operations";
import { RESULT_VISIBILITY_S } from "../../src/coordination/fold/foldResultBatch";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { useAzurite } from "../support/azuriteFixture";
import { drainWorkQueue, newTestApp, runUntilComplete } from "../support/inProcessApp";

const params = { format: "csv", keyField: "region", valueField: "amount" };
const csv = (amount: number): { inline: string } => ({ inline: `region,amount\neu,${amount}` });

describe("poison on Azurite (issue 14, items 8 and 9)", () => {
  const env = useAzurite();

  it("a worker rejection of real items (their task kind removed by a deploy) ends the job with those items failed and the reason", async () => {
    // Units of two items (not spread further): the rejected unit's items all fail, the other unit's are done.
    const made = newTestApp(env.azurite.connectionString, { WORK_UNIT_MAX_ITEMS: "2", WORK_UNIT_SPREAD: "1" });
    // A rejection is no proof that no copy of the unit ran (issue 43, hole 1): its items are held before they fail.
    // Here the hold, and the results' visibility a draining fold waits out after it, have passed as soon as they begin
    // (heldFailures.test.ts times them).
    const app: CoordinatorApp = { ...made.app, inferredFailureHoldMs: -RESULT_VISIBILITY_S * 1000 };
    const { sink } = made;
    // The same app deployed without the group-by kind (a kind removed by a deploy): no instance has it.
    const withoutKind: CoordinatorApp = { ...app, registry: new TaskRegistry() };
    const submitted = await submitJob(app, { kind: "group-by", params, items: [csv(1), csv(2), csv(3), csv(4)] });
    if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
    await runCoordinatorTick(app, sink); // registers and dispatches all four, in two units
    expect(await drainWorkQueue(app, sink, 1)).toBe(1);
    const [unit] = await app.workQueue.receive(1, 30);
    if (unit === undefined) throw new Error("no work message");
    const payload = JSON.parse(unit.text ?? "null") as unknown;
    // The worker without the kind throws the unit back for the host to retry (an upgraded instance may take it)…
    await expect(handleWorkMessage(withoutKind, sink, payload, { id: unit.id, dequeueCount: 1 })).rejects.toThrow(
      /unknown task kind "group-by"/,
    );
    // …and on its last delivery rejects it to the work poison queue with the reason.
    await handleWorkMessage(withoutKind, sink, payload, { id: unit.id, dequeueCount: MAX_DEQUEUE_COUNT });
    await app.workQueue.delete(unit);
    await runUntilComplete(app, sink, async () => (await getJobStatus(app, submitted.id))?.status === "completed", 5);
    const status = await getJobStatus(app, submitted.id);
    expect(status).toMatchObject({
      status: "completed",
      progress: { total: 4, done: 2, failed: 2 },
      aggregate: { eu: { count: 2 } },
    });
    expect(status?.failures).toHaveLength(2);
    for (const failure of status?.failures ?? [])
      expect(failure.reason).toMatch(/^rejected by the worker: unknown task kind "group-by"/);
    expect(await app.workPoisonQueue.peek(32)).toEqual([]); // claimed and deleted
  });

  it("poison that no job claims stays visible to a peek (as in the portal or Storage Explorer), never received", async () => {
    const { app, sink } = newTestApp(env.azurite.connectionString);
    // one at a time: a send of several has no fixed order
    await app.workPoisonQueue.send(["garbage that no job can claim"]);
    await app.workPoisonQueue.send([
      JSON.stringify({ v: 1, jobId: "no-such-job", item: 0, kind: "group-by", params, input: csv(1) }),
    ]);
    await runCoordinatorTick(app, sink);
    await runCoordinatorTick(app, sink);
    const raw = new QueueClient(env.azurite.connectionString, app.workPoisonQueue.name);
    const peeked = (await raw.peekMessages({ numberOfMessages: 32 })).peekedMessageItems;
    expect(peeked.map((message) => Buffer.from(message.messageText, "base64").toString("utf8"))).toEqual([
      "garbage that no job can claim",
      expect.stringContaining('"jobId":"no-such-job"'),
    ]);
    expect(peeked.map((message) => message.dequeueCount)).toEqual([0, 0]);
  });
});
