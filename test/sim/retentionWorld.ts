import { keys } from "../../src/coordination/state/jobState";
import type { SimWorld } from "./world";

/** How long before the run the expired jobs ended: past the app's retention (JOB_RETENTION_HOURS, 168 by default). */
const ENDED_HOURS_AGO = 200;

/** An expired job of the plan, as stored before the run. */
export interface ExpiredJob {
  id: string;
  endedAtMs: number;
  /** Its blobs in the system container that refuse deletion. */
  held: string[];
}

/**
 * Issue 37's retention model (`lifecycle.ts`, the `refuseDelete` fault): jobs that ended before the run began, past
 * their retention, stored as the leader left them — the job's blobs under `jobs/<id>/` and its retention marker
 * `ended/<when>-<id>` in the system container — some of whose blobs are under a legal hold or an immutability policy
 * (the account answers 409 `BlobImmutableDueToLegalHold` to every delete of them). The run's first step sweeps
 * (nothing recorded a sweep yet) and finds them due. Written straight into the account, before any process starts.
 */
export function storeExpiredJobs(world: SimWorld, systemContainer: string): ExpiredJob[] {
  const { account } = world;
  if (!account.containers.has(systemContainer)) account.createContainer(systemContainer);
  return world.plan.lifecycle.expiredJobs.map((plan, n) => {
    const id = `expired-${n}`;
    const endedAtMs = world.startMs - ENDED_HOURS_AGO * 3_600_000 - n * 1000;
    const names = Array.from({ length: plan.blobs }, (_, b) =>
      b === 0 ? keys.spec(id) : keys.outcome(id, (b - 1) * 2),
    );
    for (const name of names) account.putBlob(systemContainer, name, `{"v":1,"job":"${id}"}`, { by: "history" });
    account.putBlob(systemContainer, keys.ended(id, endedAtMs), JSON.stringify({ v: 1, id, endedAtMs }), {
      by: "history",
    });
    const held = names.slice(names.length - Math.min(plan.held, names.length));
    for (const name of held) account.held.add(`${systemContainer}/${name}`);
    return { id, endedAtMs, held };
  });
}
