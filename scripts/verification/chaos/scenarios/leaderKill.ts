import { killLeaderMidStep, nextTermAfter, stepNeverCompleted } from "./faults";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";

/** Items of each round's job. */
const ROUND_ITEMS = 30;
/**
 * Extra time each worker invocation (one unit of up to 8 items) takes, so a round's job is still being worked on
 * when its step is caught 0.2–1.5 s in: with units and wake-ups an unpaced job of 30 items finished within one short
 * step, and a full run then found no step with work to kill (round 2 of 10, after work units landed).
 */
const WORKER_DELAY_MS = 1000;

/**
 * The leader process SIGKILLed mid-step, round after round (10 in full mode, 2 in quick): each round submits a job,
 * kills whoever is in a step that has that job to work on, 0.2–1.5 s into it, starts a replacement instance (as the
 * platform would), and waits for the next term. Checks: each kill landed inside a step (from the log), a new leader
 * within lease + tick, and every job's items counted exactly once despite steps cut at arbitrary points.
 */
export function leaderKillScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario(
    "leader-kill",
    options,
    async (run) => {
      const rounds = options.rounds ?? (options.quick ? 2 : 10);
      await run.startInstances("instance", 3);
      let nextName = 4;
      let midStep = 0;
      for (let round = 1; round <= rounds; round++) {
        const fromIndex = run.cluster.records.length;
        const job = await run.jobs.submitDemo(`round-${round}`, ROUND_ITEMS, options.seed + round);
        const caught = await killLeaderMidStep(run, `round ${round}/${rounds}`, { id: job.id, fromIndex });
        if (caught === undefined) continue;
        await caught.instance.process.exited;
        if (stepNeverCompleted(run, caught.instance.id, caught.epoch)) midStep++;
        else run.fail(`round ${round}: the kill of ${caught.instance.id} landed after its step completed`);
        run.cluster.startInstance(`instance-${nextName++}`);
        if ((await nextTermAfter(run, caught.atMs, caught.instance.id)) === undefined)
          run.fail(`round ${round}: no new term within 30 s of the kill`);
      }
      Object.assign(run.details, { rounds, killedMidStep: midStep });
    },
    { LOCAL_INVOKE_DELAY_MS: `worker=${WORKER_DELAY_MS}` },
  );
}
