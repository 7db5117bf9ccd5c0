import { describe, expect, it } from "vitest";
import { handleWakeMessage, runCoordinatorTick, submitJob } from "../../src/app/operations";
import { StorageError } from "../../src/library/errors";
import { MAX_DEQUEUE_COUNT } from "../../src/app/context";
import { heldByOther, type FakeLeaseStore } from "../support/FakeLeaseStore";
import { memoryApp } from "../support/memoryApp";
import { MemoryQueue } from "../support/memoryPorts";

const JOB = {
  kind: "group-by",
  params: { format: "csv", keyField: "region", valueField: "amount" },
  items: [{ inline: "region,amount\neu,1" }, { inline: "region,amount\nus,2" }],
};

/** Lease requests of leadership attempts: a read; when free, an acquire and the read of the record after it. */
const attempts = (store: FakeLeaseStore): string[] =>
  store.calls.filter((call) => call === "read" || call === "acquire");

/** Submits the job and returns the body of the one wake-up message it sent. */
async function submitAndTakeWake(world: ReturnType<typeof memoryApp>): Promise<{ id: string; wake: string }> {
  const submitted = await submitJob(world.app, JOB);
  if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
  const [message] = await world.wakeQueue.receive(32, 30);
  if (message?.text === undefined) throw new Error("no wake-up message was sent");
  return { id: submitted.id, wake: message.text };
}

describe("wake-up: a submission wakes the coordinator", () => {
  it("a submission sends one wake-up message naming the job; { wake: false } sends none", async () => {
    const world = memoryApp();
    const submitted = await submitJob(world.app, JOB);
    expect(submitted).toMatchObject({ ok: true, wakeUp: "sent" });
    const bodies = world.wakeQueue.bodies().map((body) => JSON.parse(body) as Record<string, unknown>);
    expect(bodies).toEqual([
      expect.objectContaining({
        v: 1,
        reason: "job-submitted",
        jobId: submitted.ok ? submitted.id : "",
        from: "unit-wake",
      }),
    ]);
    expect(await submitJob(world.app, JOB, { wake: false })).toMatchObject({ ok: true, wakeUp: "off" });
    expect(world.wakeQueue.length).toBe(1);
  });

  it("a wake-up that cannot be sent does not lose the job: it is accepted and the failure is reported", async () => {
    const failing = new MemoryQueue("wake");
    failing.send = () => Promise.reject(new StorageError("StorageUnavailable", undefined, "queue down (simulated)"));
    const world = memoryApp({ wakeQueue: failing });
    const submitted = await submitJob(world.app, JOB);
    expect(submitted).toMatchObject({
      ok: true,
      itemCount: 2,
      wakeUp: "failed",
      wakeUpError: expect.stringContaining("queue down") as unknown,
    });
    // The next tick still finds it: the timer is the heartbeat.
    expect(await runCoordinatorTick(world.app, world.sink)).toBe("completed");
    expect(world.events.filter((event) => event.type === "job-registered")).toHaveLength(1);
  });

  it("the wake handler makes ONE leadership attempt and runs the step like a tick: the job is registered and dispatched", async () => {
    const world = memoryApp();
    const { id, wake } = await submitAndTakeWake(world);
    expect(await handleWakeMessage(world.app, world.sink, wake, { dequeueCount: 1 })).toBe("completed");
    expect(attempts(world.store)).toEqual(["read", "acquire", "read"]);
    expect(world.events.find((event) => event.type === "step-started")).toMatchObject({
      trigger: "wake",
      wakeReason: "job-submitted",
    });
    expect(world.events.find((event) => event.type === "job-registered")).toMatchObject({ jobId: id });
    // Both items, each in a unit of its own: at the default settings a job is cut into WORK_UNIT_SPREAD (16) units, so
    // a 2-item job goes out as 2 units of 1.
    expect(world.workQueue.bodies().map((body) => (JSON.parse(body) as { inputs: unknown[] }).inputs.length)).toEqual([
      1, 1,
    ]);
  });

  it("not acquired is a normal outcome: one lease read, no acquire, and the handler returns (the message is consumed, not retried)", async () => {
    const world = memoryApp({ store: heldByOther() });
    const { wake } = await submitAndTakeWake(world);
    await expect(handleWakeMessage(world.app, world.sink, wake, { dequeueCount: 1 })).resolves.toBe("not-acquired");
    expect(attempts(world.store)).toEqual(["read"]);
    expect(world.events.filter((event) => event.type === "step-skipped")).toEqual([
      expect.objectContaining({ trigger: "wake", leader: "other-1", leaderEpoch: 7 }),
    ]);
  });

  it("a wake-up while this process already runs a step is a no-op: no lease request at all", async () => {
    const world = memoryApp();
    await submitJob(world.app, JOB, { wake: false });
    // Nobody works on the job, so the step polls for its whole budget (1 s).
    const tick = runCoordinatorTick(world.app, world.sink);
    while (!world.events.some((event) => event.type === "job-registered"))
      await new Promise((done) => setTimeout(done, 10));
    const before = attempts(world.store).length;
    const wake = JSON.stringify({
      v: 1,
      reason: "job-submitted",
      jobId: "another-job",
      sentAtMs: Date.now(),
      from: "elsewhere",
    });
    expect(await handleWakeMessage(world.app, world.sink, wake, { dequeueCount: 1 })).toBe("coalesced");
    expect(attempts(world.store)).toHaveLength(before);
    expect(world.events.filter((event) => event.type === "step-skipped")).toEqual([
      expect.objectContaining({ trigger: "wake", reason: "coalesced" }),
    ]);
    expect(await tick).toBe("completed");
  });

  it("ten wake-ups at once on one process cost one leadership attempt: one runs the step, nine are coalesced", async () => {
    const world = memoryApp();
    await submitJob(world.app, JOB, { wake: false });
    const wake = JSON.stringify({ v: 1, reason: "job-submitted", sentAtMs: Date.now(), from: "burst" });
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, () => handleWakeMessage(world.app, world.sink, wake, { dequeueCount: 1 })),
    );
    expect(outcomes.filter((outcome) => outcome === "completed")).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome === "coalesced")).toHaveLength(9);
    expect(attempts(world.store)).toEqual(["read", "acquire", "read"]);
  });

  it("a malformed wake-up message is rejected with its reason and costs no lease request", async () => {
    const world = memoryApp();
    expect(await handleWakeMessage(world.app, world.sink, '{"v":1,"reason":""}', { dequeueCount: 1 })).toBe("rejected");
    expect(await handleWakeMessage(world.app, world.sink, "not json", { dequeueCount: 1 })).toBe("rejected");
    expect(world.store.calls).toEqual([]);
    const rejected = world.events.filter((event) => event.type === "message-rejected");
    expect(rejected).toHaveLength(2);
    expect(rejected[0]).toMatchObject({ queue: "wake", reason: expect.stringMatching(/reason/) as unknown });
    expect(rejected[1]).toMatchObject({ queue: "wake", reason: expect.stringMatching(/not valid JSON/) as unknown });
  });

  it("a step that fails on storage is retried by the host, except on the last delivery (a wake-up never goes to poison)", async () => {
    const world = memoryApp();
    world.store.mode = "down";
    const wake = JSON.stringify({ v: 1, reason: "job-submitted", sentAtMs: Date.now(), from: "x" });
    await expect(handleWakeMessage(world.app, world.sink, wake, { dequeueCount: 1 })).rejects.toThrow(/ECONNREFUSED/);
    await expect(handleWakeMessage(world.app, world.sink, wake, { dequeueCount: MAX_DEQUEUE_COUNT })).resolves.toBe(
      "error",
    );
  });
});
