import { delay } from "../../../../src/library/util/delay";
import { stepIntervals } from "../invariants";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";
import { catchStepWithJob, jobCompleted } from "./faults";

/** Grace for a renewal answered just before Azurite stopped to be logged after, and for process scheduling. */
const GRACE_MS = 2000;
/** Each work unit's invocation is held this long, so the job outlasts the seeded wait before the outage. */
const WORKER_DELAY_MS = 1000;

/**
 * Storage outage: Azurite (persistent, so data survives) is stopped for 20 s while the leader is mid-step, then
 * started again on the same ports. Checks: no term begins or is renewed during the outage; every step running when
 * storage went away ends within the renew deadline; a leader exists again within lease + tick after storage returns;
 * the job still completes with every item counted once.
 */
export function outageScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario(
    "storage-outage",
    options,
    async (run) => {
      const { cluster } = run;
      const outageMs = 20_000;
      await run.startInstances("instance", 3);
      const submittedAt = cluster.records.length;
      const job = await run.jobs.submitDemo("outage", 120, options.seed);
      let downAt = 0;
      // A step that has the job to work on (a step without work ends within milliseconds).
      const caught = await catchStepWithJob(run, job.id, submittedAt, async () => {
        downAt = Date.now();
        await cluster.azurite.stopService();
      });
      if (caught === undefined) {
        run.fail(
          `no leader was in a step when the outage was due${jobCompleted(run, job.id) ? " (the job completed first)" : ""}`,
        );
        return;
      }
      options.log(`  Azurite stopped while ${caught.instance.id} was in its step of epoch ${caught.epoch}`);
      await delay(Math.max(0, downAt + outageMs - Date.now()));
      // Storage answers again as soon as Azurite listens, before startService() resolves: a term may legitimately
      // begin in between (a CI run flagged "lease-acquired … during the outage" 7 ms before startService resolved).
      const restartAt = Date.now();
      await cluster.azurite.startService();
      const upAt = Date.now();
      options.log(`  Azurite started again after ${((upAt - downAt) / 1000).toFixed(1)} s`);
      run.recordFault(
        { kind: "storage-outage", target: "azurite", startMs: downAt, endMs: upAt, leaderCheck: true },
        { leaderEpoch: caught.epoch },
      );
      run.afterJobs.push(() => {
        const during = cluster.records.filter(
          (record) =>
            (record.type === "lease-acquired" || record.type === "lease-renewed") &&
            Date.parse(record.ts) > downAt + GRACE_MS &&
            Date.parse(record.ts) < restartAt,
        );
        for (const record of during)
          run.fail(`${record.type} by ${record.instance} (epoch ${record.epoch ?? "?"}) during the outage`);
        const deadlineMs = cluster.settings.LEASE_RENEW_DEADLINE_MS;
        const steps = stepIntervals(cluster.records, { renewDeadlineMs: deadlineMs, endOfRunMs: Date.now() });
        const caughtOut = steps.filter((step) => step.startMs < upAt && step.endMs > downAt);
        for (const step of caughtOut) {
          if (step.endMs > downAt + deadlineMs + GRACE_MS)
            run.fail(
              `${step.instance}'s step of epoch ${step.epoch} ran ${step.endMs - downAt} ms into the outage (renew deadline ${deadlineMs} ms)`,
            );
        }
        Object.assign(run.details, {
          outageMs: upAt - downAt,
          leaderAtOutage: caught.instance.id,
          stepsCaughtByOutage: caughtOut.map((step) => ({
            instance: step.instance,
            epoch: step.epoch,
            end: step.end,
            endedAfterMs: step.endMs - downAt,
          })),
        });
        return Promise.resolve();
      });
    },
    { LOCAL_INVOKE_DELAY_MS: `worker=${WORKER_DELAY_MS}` },
  );
}
