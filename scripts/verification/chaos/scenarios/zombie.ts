import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";
import { freezeStepWithJob, jobCompleted, thawAfter } from "./faults";

/** Each work unit's invocation is held this long, so the job outlasts the seeded wait before the freeze. */
const WORKER_DELAY_MS = 1000;

/**
 * A zombie leader: the leader is frozen with SIGSTOP mid-step for longer than the lease (20 s; 15 s lease), a
 * successor takes over, then the zombie is thawed with SIGCONT and carries on from where it was. Checks: a successor
 * led while it was frozen; the zombie's step ended aborted (never completed) after it woke; and — against the stored
 * state, not its log — no version written with its epoch appeared after it woke.
 */
export function zombieScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario(
    "zombie-leader",
    options,
    async (run) => {
      const { cluster } = run;
      const freezeMs = options.quick ? 20_000 : 25_000;
      await run.startInstances("instance", 3);
      const submittedAt = cluster.records.length;
      const job = await run.jobs.submitDemo("zombie", 120, options.seed);
      // A step that has the job to work on: a step without work ends within milliseconds, and the seeded wait could
      // outlast the job's step, leaving only those. (It also narrows the window of a step whose end is still on its
      // way to the log when the freeze lands: after the job completes, its step has index writes, ~57 ms, to do.)
      const caught = await freezeStepWithJob(run, job.id, submittedAt);
      if (caught === undefined) {
        run.fail(`no leader was in a step to freeze${jobCompleted(run, job.id) ? " (the job completed first)" : ""}`);
        return;
      }
      const { instance: zombie, epoch, atMs: frozenAt } = caught;
      options.log(`  SIGSTOP ${zombie.id} in its step of epoch ${epoch} for ${freezeMs / 1000} s`);
      const { successor, resumedAt, ended } = await thawAfter(run, caught, freezeMs, submittedAt, "the zombie");
      if (successor === undefined)
        run.fail(`no successor acquired the lease while ${zombie.id} was frozen for ${freezeMs} ms`);
      if (ended === undefined) run.fail(`the zombie's step (epoch ${epoch}) did not end within 15 s of SIGCONT`);
      else if (ended.type === "step-completed")
        run.fail(`the zombie's step (epoch ${epoch}) COMPLETED after waking instead of aborting`);
      Object.assign(run.details, {
        zombie: zombie.id,
        zombieEpoch: epoch,
        frozenMs: resumedAt - frozenAt,
        successorEpoch: successor?.epoch,
        successorAfterFreezeMs: successor === undefined ? undefined : Date.parse(successor.ts) - frozenAt,
        zombieStepEnd:
          ended === undefined ? undefined : { type: ended.type, reason: ended.reason, detail: ended.detail },
      });
    },
    { LOCAL_INVOKE_DELAY_MS: `worker=${WORKER_DELAY_MS}` },
  );
}
