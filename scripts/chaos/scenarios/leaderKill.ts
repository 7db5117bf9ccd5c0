import { killLeaderMidStep, nextTermAfter, stepNeverCompleted } from "./faults";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";

/**
 * The leader process SIGKILLed mid-step, round after round (10 in full mode, 2 in quick): each round submits a job,
 * kills whoever is in a step 0.2–1.5 s into it, starts a replacement instance (as the platform would), and waits for
 * the next term. Checks: each kill landed inside a step (from the log), a new leader within lease + tick, and every
 * job's items counted exactly once despite steps cut at arbitrary points.
 */
export function leaderKillScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario("leader-kill", options, async (run) => {
    const rounds = options.rounds ?? (options.quick ? 2 : 10);
    await run.startInstances("instance", 3);
    let nextName = 4;
    let midStep = 0;
    for (let round = 1; round <= rounds; round++) {
      await run.jobs.submitDemo(`round-${round}`, 30, options.seed + round);
      const caught = await killLeaderMidStep(run, `round ${round}/${rounds}`);
      if (caught === undefined) continue;
      await caught.instance.process.exited;
      if (stepNeverCompleted(run, caught.instance.id, caught.epoch)) midStep++;
      else run.fail(`round ${round}: the kill of ${caught.instance.id} landed after its step completed`);
      run.cluster.startInstance(`instance-${nextName++}`);
      if ((await nextTermAfter(run, caught.atMs, caught.instance.id)) === undefined) run.fail(`round ${round}: no new term within 30 s of the kill`);
    }
    Object.assign(run.details, { rounds, killedMidStep: midStep });
  });
}
