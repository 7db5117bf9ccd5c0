import { describe, expect, it } from "vitest";
import type { Sink } from "../../src/app/context";
import type { AppEvent } from "../../src/app/events";
import { runCoordinatorTick, submitJob } from "../../src/app/operations";
import { memoryApp } from "../support/memoryApp";

const JOB = {
  kind: "group-by",
  params: { format: "csv", keyField: "region", valueField: "amount" },
  items: [{ inline: "region,amount\neu,1" }],
};

/** A sink that records what one invocation was told: its events and its log lines. */
function recordingSink(): Sink & { events: AppEvent[]; logs: string[] } {
  const events: AppEvent[] = [];
  const logs: string[] = [];
  const log = (message: string): void => {
    logs.push(message);
  };
  return {
    events,
    logs,
    logger: { verbose: log, info: log, warn: log, error: log },
    emit: (event) => events.push(event),
  };
}

describe("per-invocation sinks: concurrent invocations in one process never log to each other's context", () => {
  it("a tick that starts while this process leads gets only its own events and logs; the leading tick gets all of its term's", async () => {
    const world = memoryApp();
    await submitJob(world.app, JOB, { wake: false });
    const leading = recordingSink();
    const second = recordingSink();
    // Nobody works on the job, so the step polls for its whole budget (1 s): time for a second invocation to arrive.
    const tick = runCoordinatorTick(world.app, leading);
    while (!leading.events.some((event) => event.type === "job-registered"))
      await new Promise((done) => setTimeout(done, 10));
    expect(await runCoordinatorTick(world.app, second)).toBe("not-acquired");
    expect(await tick).toBe("completed");

    expect(second.events.map((event) => event.type)).toEqual(["step-skipped"]);
    expect(second.logs.filter((line) => /released|leads .* with epoch|renewed/.test(line))).toEqual([]);
    const types = leading.events.map((event) => event.type);
    expect(types.slice(0, 2)).toEqual(["lease-acquired", "step-started"]);
    expect(types.slice(-2)).toEqual(["lease-released", "step-completed"]);
    expect(leading.logs.some((line) => line.includes("released"))).toBe(true);
  });
});
