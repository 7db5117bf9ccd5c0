import { stepDown } from "../../../../src/app/operations";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";
import { catchStepWithJob, nextTermAfter } from "./faults";

/** Items of each round's job. */
const ROUND_ITEMS = 60;
/**
 * Extra time each work item takes. At most 2 × DISPATCH_BATCH_SIZE = 10 items of a job are in flight, so a round's
 * job needs at least 60 / 10 × 1 s = 6 s after its first dispatch: longer than the wait for a step and the seeded
 * 0.2–1.5 s before the step-down, even when the step that registered it ends on its budget and the next tick's step
 * is the one caught. Without it, a job could finish first and leave only idle steps, which end in milliseconds.
 */
const WORKER_DELAY_MS = 1000;

/**
 * Revocation: while the leader is mid-step, an operator asks it to step down (the library's `requestStepDown`, as
 * `POST /api/leader/step-down` does). Each round submits its own job and revokes a step that has it to work on, found
 * from the event log (so every round has a step to revoke, however fast earlier jobs finished). Checks: the revoked
 * epoch is the one in its step; that step ends aborted with reason "revoked" within a renewal interval (+ slack); a
 * new term follows; every job is counted exactly once.
 */
export function revocationScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario(
    "revocation",
    options,
    async (run) => {
      const { cluster } = run;
      const rounds = options.rounds ?? (options.quick ? 2 : 4);
      const client = cluster.client();
      await run.startInstances("instance", 3);
      const outcomes: unknown[] = [];
      for (let round = 1; round <= rounds; round++) {
        let revoked: number | undefined;
        const marker = cluster.records.length;
        const job = await run.jobs.submitDemo(`round-${round}`, ROUND_ITEMS, options.seed + round);
        const caught = await catchStepWithJob(run, job.id, marker, async () => {
          revoked = await stepDown(client);
        });
        if (caught === undefined) {
          const completed = cluster.records.some(
            (record) => record.type === "job-completed" && record.jobId === job.id,
          );
          run.fail(
            `round ${round}: no step with job ${job.label} was caught running${completed ? " (the job completed first)" : " within 40 s"}`,
          );
          continue;
        }
        run.recordFault(
          {
            kind: "step-down",
            target: caught.instance.id,
            startMs: caught.atMs,
            endMs: caught.atMs,
            leaderCheck: true,
          },
          { epoch: caught.epoch, revoked },
        );
        options.log(
          `  round ${round}/${rounds}: step-down of ${caught.instance.id} (epoch ${caught.epoch}; revoked ${revoked ?? "none"})`,
        );
        const limitMs = cluster.settings.LEASE_RENEW_INTERVAL_MS + 3000;
        const ended = await cluster.waitForEvent(
          (record) =>
            record.instance === caught.instance.id &&
            record.epoch === caught.epoch &&
            (record.type === "step-aborted" || record.type === "step-completed"),
          limitMs,
          marker,
        );
        // The step may legitimately complete before the next renewal notices the revocation; then it must not lead on.
        if (ended === undefined)
          run.fail(`round ${round}: the revoked step (epoch ${caught.epoch}) did not end within ${limitMs} ms`);
        else if (ended.type === "step-aborted" && ended.reason !== "revoked")
          run.fail(`round ${round}: the step aborted with reason ${String(ended.reason)}, not "revoked"`);
        if (revoked !== undefined && revoked !== caught.epoch)
          run.fail(`round ${round}: step-down revoked epoch ${revoked}, but epoch ${caught.epoch} was in its step`);
        const next = await nextTermAfter(run, caught.atMs, "", 20_000);
        if (next === undefined) run.fail(`round ${round}: no new term within 20 s of the step-down`);
        outcomes.push({
          epoch: caught.epoch,
          end: ended?.type,
          reason: ended?.reason,
          endedAfterMs: ended === undefined ? undefined : Date.parse(ended.ts) - caught.atMs,
          nextEpoch: next,
        });
      }
      Object.assign(run.details, { rounds, revocations: outcomes });
    },
    { LOCAL_INVOKE_DELAY_MS: `worker=${WORKER_DELAY_MS}` },
  );
}
