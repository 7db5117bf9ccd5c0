import { describe, expect, it } from "vitest";
import type { JobStatus } from "../../src/coordination/state/jobStatus";
import type { InstanceProcess, InstanceState } from "../../dev/src/local/instances";
import { MidJobLeaderKill } from "../../dev/src/local/leaderKill";
import type { EventLine } from "../../dev/src/local/protocol";

/** A stand-in instance process: its state and whether it was killed. */
function instance(name: string, role: InstanceState["role"]) {
  const state: InstanceState = { name, instanceId: `${name}-1`, pid: 1, role, startedAtMs: 0, recentLogs: [] };
  const fake = {
    state,
    killed: false,
    get alive() {
      return !fake.killed;
    },
    kill() {
      fake.killed = true;
    },
  };
  return fake;
}

const status = (done: number, state: JobStatus["status"] = "running"): JobStatus => ({
  id: "job",
  kind: "group-by",
  status: state,
  progress: { total: 100, dispatched: 100, done, failed: 0, skipped: 0 },
  aggregate: undefined,
  failures: [],
  createdAt: "",
  completedAt: undefined,
  lastEpoch: 1,
});

const event = (type: string, extra: object = {}): EventLine =>
  ({ kind: "event", type, instanceId: "x", atMs: 0, pid: 1, ...extra }) as unknown as EventLine;

describe("--kill-leader-after: a leader is killed mid-job, on the event, not by polling who leads", () => {
  it("kills the instance holding a term once the job has items done, naming how far the job was", () => {
    const [a, b] = [instance("instance-1", "follower"), instance("instance-2", "leader")];
    const killer = new MidJobLeaderKill([a, b] as unknown as InstanceProcess[], 0, () => undefined);
    killer.watch("job");
    killer.onStatus(status(0));
    expect(b.killed).toBe(false); // nothing done yet: not mid-job
    killer.onStatus(status(12));
    expect([a.killed, b.killed]).toEqual([false, true]);
    expect(killer.result).toBe("killed instance-2, the leader (epoch ?), with the job at 12/100 items");
  });

  it("when nobody holds a term then, kills the next instance whose lease-acquired event arrives", () => {
    const [a, b] = [instance("instance-1", "follower"), instance("instance-2", "follower")];
    const killer = new MidJobLeaderKill([a, b] as unknown as InstanceProcess[], 0, () => undefined);
    killer.watch("job");
    killer.onStatus(status(40));
    expect(killer.killed).toBe(false);
    killer.onEvent(event("step-skipped"), a as unknown as InstanceProcess);
    killer.onEvent(event("lease-acquired", { epoch: 3 }), a as unknown as InstanceProcess);
    expect([a.killed, b.killed]).toEqual([true, false]);
  });

  it("never kills before its time, nor once the job has ended, and then says why nobody was killed", () => {
    const leader = instance("instance-1", "leader");
    const early = new MidJobLeaderKill([leader] as unknown as InstanceProcess[], Date.now() + 60_000, () => undefined);
    early.watch("job");
    early.onStatus(status(50));
    expect(leader.killed).toBe(false);
    const late = new MidJobLeaderKill([leader] as unknown as InstanceProcess[], 0, () => undefined);
    late.watch("job");
    late.onEvent(event("job-completed", { jobId: "job" }), leader as unknown as InstanceProcess);
    late.onStatus(status(100, "completed"));
    expect(leader.killed).toBe(false);
    expect(late.result).toBe("no leader was killed: the job ended first (give it more items)");
  });
});
