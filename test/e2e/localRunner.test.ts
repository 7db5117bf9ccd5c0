import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_APP } from "../../scripts/support/repoApp";
import { runLocal, type LocalRunResult } from "../../dev/src/local/run";

interface LoggedEvent {
  ts: string;
  instance: string;
  pid: number;
  type: string;
  epoch?: number;
}

/**
 * Step intervals from the event log: step-started → step-completed/aborted of the same instance and epoch, or the
 * instance's exit.
 */
function stepIntervals(events: LoggedEvent[]): { instance: string; epoch: number; start: number; end: number }[] {
  const exits = new Map(events.filter((e) => e.type === "instance-exited").map((e) => [e.instance, Date.parse(e.ts)]));
  return events
    .filter((e) => e.type === "step-started")
    .map((start) => {
      const end = events.find(
        (e) =>
          (e.type === "step-completed" || e.type === "step-aborted") &&
          e.instance === start.instance &&
          e.epoch === start.epoch,
      );
      return {
        instance: start.instance,
        epoch: start.epoch ?? -1,
        start: Date.parse(start.ts),
        end: end ? Date.parse(end.ts) : (exits.get(start.instance) ?? Infinity),
      };
    });
}

describe("local runner end to end (3 OS processes on Azurite)", () => {
  const outputDir = mkdtempSync(join(tmpdir(), "e2e-local-"));
  afterAll(() => {
    rmSync(outputDir, { recursive: true, force: true });
  });

  it("survives the leader being SIGKILLed mid-job: the job completes once-counted, steps never overlap, epochs increase", async () => {
    const result: LocalRunResult = await runLocal({
      appEntry: REPO_APP.LOCAL_APP_ENTRY,
      hostJsonPath: REPO_APP.LOCAL_HOST_JSON,
      instances: 3,
      job: { kind: "demo", items: 300 },
      // Every 30 s: the step budget below (20 s, so the kill lands mid-step) must be below the schedule's interval.
      // Wake-ups from results and their follow-ups carry the job between ticks, and after the kill.
      schedule: "*/30 * * * * *",
      killLeaderAfterS: 5,
      live: "off",
      settleS: 1,
      maxWaitS: 120,
      outputDir,
      // Small dispatch batches of one-item units so the job spans many passes and the kill lands mid-step (with
      // units of 32 and the step's quick idle polls, 300 items can be done before the kill).
      env: {
        ...process.env,
        COORDINATION_STORAGE: undefined,
        DISPATCH_BATCH_SIZE: "5",
        WORK_UNIT_MAX_ITEMS: "1",
        STEP_BUDGET_MS: "20000",
      },
    });
    expect(result.problem).toBeUndefined();
    expect(result.exitCode).toBe(0);
    // The aggregate equals the one the runner computed independently from the demo data: nothing lost or doubled.
    expect(result.matches).toBe(true);
    expect(result.aggregate).toEqual(result.expected);
    expect(result.status?.progress).toEqual({ total: 300, dispatched: 300, done: 300, failed: 0, skipped: 0 });
    expect(result.statusUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/status$/);

    expect(result.kill).toMatch(/^killed instance-\d, the leader \(epoch \d+\), with the job at \d+\/300 items$/);
    const killed = result.instances.filter((i) => i.exit?.killedByRunner === true);
    expect(killed).toHaveLength(1);
    expect(killed[0]?.exit?.signal).toBe("SIGKILL");

    const events = readFileSync(result.eventsPath, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as LoggedEvent);
    const killedName = killed[0]?.instanceId ?? "";
    const killedAt = Date.parse(
      events.find((e) => e.type === "instance-exited" && e.instance === killedName)?.ts ?? "",
    );
    const intervals = stepIntervals(events);
    // The kill landed mid-step: the killed instance has a step that never completed.
    expect(
      events.some(
        (e) =>
          e.type === "step-started" &&
          e.instance === killedName &&
          !events.some(
            (f) =>
              f.type === "step-completed" &&
              f.instance === killedName &&
              f.epoch === e.epoch &&
              Date.parse(f.ts) <= killedAt,
          ),
      ),
    ).toBe(true);
    for (const a of intervals) {
      for (const b of intervals) {
        if (a === b) continue;
        const overlap = a.start < b.end && b.start < a.end;
        expect(overlap, `steps ${a.instance}@e${a.epoch} and ${b.instance}@e${b.epoch} overlap`).toBe(false);
      }
    }
    const acquired = events
      .filter((e) => e.type === "lease-acquired")
      .sort((x, y) => Date.parse(x.ts) - Date.parse(y.ts));
    const epochs = acquired.map((e) => e.epoch ?? 0);
    expect(epochs.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < epochs.length; i++) expect(epochs[i]).toBeGreaterThan(epochs[i - 1] ?? Infinity);
    // After the kill, another instance led and finished the job.
    expect(acquired.some((e) => Date.parse(e.ts) > killedAt && e.instance !== killedName)).toBe(true);
  }, 180_000);
});
