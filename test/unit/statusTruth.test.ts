import { describe, expect, it } from "vitest";
import { renderStatusPage } from "../../src/app/renderStatusPage";
import { readStatusView } from "../../src/app/statusView";
import { JobStore } from "../../src/coordination/state/jobStore";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import { FencedStateStore } from "../../src/library/fencing/FencedStateStore";
import { FakeLeaseStore } from "../support/FakeLeaseStore";
import { ONE_PASS, item, params, work, world } from "../support/coordinationWorld";
import { fakeTerm } from "../support/memoryPorts";

/**
 * Issue 37, item 7: what the status page shows is true. Right after a job completed it showed "Active (1 running…)"
 * with a green "completed" pill and "Recently ended: None yet" (the index still listed the job as active until the
 * step's next look at it), and the job's epoch 5 under "Epoch" while the leader was at 6. Its recent terms showed only
 * when each began; they show how long each lasted and how it ended, as the local timeline does.
 */
const T0 = Date.parse("2026-05-01T12:00:00.000Z");

function sourcesOf(made: ReturnType<typeof world>) {
  return {
    leaseStore: new FakeLeaseStore(() => T0),
    state: made.state,
    system: made.system,
    registry: made.deps.registry,
    workPoisonQueue: made.poison,
    resultsPoisonQueue: made.resultsPoison,
  };
}

describe("the status page tells the truth (issue 37, item 7)", () => {
  it("a job that ended but is still on the index's active list shows as ended, not as running", async () => {
    const made = world({ now: () => T0 });
    const { deps } = made;
    const { id } = await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(5), ONE_PASS);
    await work(deps, made.work);
    await runCoordinationStep(deps, fakeTerm(5), ONE_PASS); // completed, and taken off the active list
    // The moment between a fold that completed it and the write that takes it off the list (another pass, or the
    // next step when this one's budget ran out): the index still lists it as active.
    await new JobStore(new FencedStateStore(made.state, fakeTerm(6))).updateIndex({ add: [id] });
    const view = await readStatusView(sourcesOf(made), { nowMs: T0 });
    expect(view.jobs.active).toEqual([]);
    expect(view.jobs.recent.map((job) => [job.id, job.status])).toEqual([[id, "completed"]]);
    const page = renderStatusPage(view, { nonce: "n" });
    expect(page).toContain("(0 running, 0 waiting for a leader)");
    expect(page).not.toContain("None yet");
  });

  it("names a job's epoch for what it is: the term that last wrote it, not the leader's", async () => {
    const made = world({ now: () => T0 });
    const { deps } = made;
    await storeSubmission(deps.system, { kind: "group-by", params, items: [item("a", 1)] });
    await runCoordinationStep(deps, fakeTerm(5), ONE_PASS);
    const page = renderStatusPage(await readStatusView(sourcesOf(made), { nowMs: T0 }), { nonce: "n" });
    expect(page).toContain(">Written in epoch</th>");
    expect(page).not.toContain("<th>Age</th><th>Epoch</th>");
  });

  it("each recent term shows how long it lasted and how it ended: released, lapsed, or leading now", async () => {
    let nowMs = T0;
    const made = world({ now: () => nowMs });
    const { deps } = made;
    const term = (epoch: number, startedAtMs: number, previousEnd: "released" | "lapsed" = "released") => ({
      ...fakeTerm(epoch, `instance-${epoch}`, previousEnd),
      startedAtMs,
    });
    // Epoch 1 runs its step for 2 s and releases; epoch 2 runs 3 s and dies (its successor finds the lease lapsed);
    // epoch 3 leads now.
    const step = async (epoch: number, startMs: number, endMs: number, previousEnd: "released" | "lapsed") => {
      nowMs = startMs;
      const t = term(epoch, startMs, previousEnd);
      await runCoordinationStep({ ...deps, now: () => nowMs }, t, {
        budgetMs: 60_000,
        maxPasses: 1,
        monotonicMs: () => (nowMs = endMs),
      });
    };
    await step(1, T0, T0 + 2000, "released");
    await step(2, T0 + 10_000, T0 + 13_000, "released");
    await step(3, T0 + 20_000, T0 + 20_500, "lapsed");
    const view = await readStatusView(
      { ...sourcesOf(made), leaseStore: leaseHeldBy("instance-3", 3) },
      { nowMs: T0 + 30_000 },
    );
    expect(view.timeline.terms.map((t) => [t.epoch, t.lasted, t.ended])).toEqual([
      [1, "2 s", "released"],
      [2, "3 s", "lapsed"],
      [3, "10 s", "leading now"],
    ]);
    const page = renderStatusPage(view, { nonce: "n" });
    expect(page).toContain("<th>Lasted</th><th>Ended</th>");
    expect(page).toMatch(/<tr data-epoch="2">.*<td class="num">3 s<\/td><td>lapsed<\/td>/);
  });
});

/** A lease store whose lease `holder` holds at `epoch`. */
function leaseHeldBy(holder: string, epoch: number): FakeLeaseStore {
  const store = new FakeLeaseStore(() => T0);
  store.record = { ...store.record, holder, epoch };
  store.leaseId = "held";
  store.expiresAtMs = T0 + 60_000;
  return store;
}
