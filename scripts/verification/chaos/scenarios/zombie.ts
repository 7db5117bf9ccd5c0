import { delay } from "../../../../src/library/util/delay";
import { writesOfEpochAfter } from "../invariants";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";
import { catchStepWithJob, jobCompleted } from "./faults";

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
      const caught = await catchStepWithJob(run, job.id, submittedAt, (instance) => {
        instance.process.signal("SIGSTOP");
        instance.frozen = true;
      });
      if (caught === undefined) {
        run.fail(`no leader was in a step to freeze${jobCompleted(run, job.id) ? " (the job completed first)" : ""}`);
        return;
      }
      const { instance: zombie, epoch, atMs: frozenAt } = caught;
      options.log(`  SIGSTOP ${zombie.id} in its step of epoch ${epoch} for ${freezeMs / 1000} s`);
      const successor = await cluster.waitForEvent(
        (record) =>
          record.type === "lease-acquired" &&
          record.instance !== zombie.id &&
          (record.epoch ?? 0) > epoch &&
          Date.parse(record.ts) >= frozenAt,
        freezeMs,
      );
      await delay(Math.max(0, frozenAt + freezeMs - Date.now()));
      const marker = cluster.records.length;
      zombie.process.signal("SIGCONT");
      zombie.frozen = false;
      const resumedAt = Date.now();
      options.log(`  SIGCONT ${zombie.id}`);
      run.freezes.push({ instance: zombie.id, fromMs: frozenAt, toMs: resumedAt });
      run.recordFault(
        { kind: "SIGSTOP", target: zombie.id, startMs: frozenAt, endMs: resumedAt, leaderCheck: true },
        { epoch, frozenMs: resumedAt - frozenAt },
      );
      if (successor === undefined)
        run.fail(`no successor acquired the lease while ${zombie.id} was frozen for ${freezeMs} ms`);
      const ended = await cluster.waitForEvent(
        (record) =>
          record.instance === zombie.id &&
          record.epoch === epoch &&
          (record.type === "step-completed" || record.type === "step-aborted"),
        15_000,
        marker,
      );
      if (ended === undefined) run.fail(`the zombie's step (epoch ${epoch}) did not end within 15 s of SIGCONT`);
      else if (ended.type === "step-completed")
        run.fail(`the zombie's step (epoch ${epoch}) COMPLETED after waking instead of aborting`);
      run.afterJobs.push(() => {
        const late = writesOfEpochAfter(run.observer.versions, epoch, resumedAt);
        run.staleWrites += late.length;
        for (const version of late) run.fail(`the zombie's epoch ${epoch} wrote ${version.key} after it woke`);
        return Promise.resolve();
      });
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
