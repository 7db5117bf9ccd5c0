import { delay } from "../../../../src/library/util/delay";
import { UNIT_DEFAULTS, type ChaosInstance } from "../cluster";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";

/**
 * Settings of the worker-only instances: slow items (so a kill lands mid-unit) and a short message lease (quick
 * redelivery).
 */
const WORKER_ENV = {
  "AzureWebJobs.coordinator.Disabled": "true",
  LOCAL_INVOKE_DELAY_MS: "worker=300",
  LOCAL_MESSAGE_LEASE_SECONDS: "5",
};

/**
 * A worker process killed mid-unit: two coordinator-only instances lead, with the app's default units (the job's
 * units as the app sizes them: 80–120 items cut into 16 units, 5–8 items each), two worker-only instances process
 * them (each invocation made to take 300 ms longer). A worker is SIGKILLed while it has work invocations in
 * flight (from the host's Executing/Executed lines); a replacement starts. Checks: the kill landed mid-unit, and the
 * job still counts every item exactly once — the killed worker's units were redelivered whole (their messages were
 * never deleted).
 */
export function workerKillScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario("worker-kill", options, async (run) => {
    const { cluster } = run;
    const rounds = options.rounds ?? (options.quick ? 1 : 3);
    // Leaders with the app's default units (issue 24): the rule sizes the job's units, not the suite's 8 items.
    await run.startInstances("coord", 2, { "AzureWebJobs.worker.Disabled": "true", ...UNIT_DEFAULTS });
    const workers = await run.startInstances("worker", 2, WORKER_ENV);
    await run.jobs.submitDemo("worker-kill", 60 + rounds * 20, options.seed);
    const inFlightAtKill: number[] = [];
    let nextName = 3;
    for (let round = 1; round <= rounds; round++) {
      const victim = await busyWorker(workers, 40_000);
      if (victim === undefined) {
        run.fail(`round ${round}: no worker had a work unit in flight to kill`);
        break;
      }
      await delay(run.random.int(0, 150));
      const inFlight = victim.inFlight.size;
      victim.process.kill();
      const atMs = Date.now();
      inFlightAtKill.push(inFlight);
      run.recordFault(
        { kind: "SIGKILL", target: victim.id, startMs: atMs, endMs: atMs, leaderCheck: false },
        { inFlight },
      );
      options.log(`  round ${round}/${rounds}: SIGKILL ${victim.id} with ${inFlight} work unit(s) in flight`);
      if (inFlight === 0) run.fail(`round ${round}: the kill of ${victim.id} did not land mid-unit`);
      workers.splice(workers.indexOf(victim), 1, cluster.startInstance(`worker-${nextName++}`, WORKER_ENV));
      await delay(2000);
    }
    run.details.inFlightAtKill = inFlightAtKill;
  });
}

async function busyWorker(workers: readonly ChaosInstance[], timeoutMs: number): Promise<ChaosInstance | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const busy = workers.find((worker) => worker.process.alive && worker.inFlight.size > 0);
    if (busy !== undefined) return busy;
    await delay(20);
  }
  return undefined;
}
