import { delay } from "../../../src/util/delay";
import type { ChaosInstance } from "../cluster";
import type { ScenarioRun } from "../scenario";

/** Fault helpers several scenarios share. */

/** A leader caught in a step. */
export interface CaughtLeader {
  instance: ChaosInstance;
  epoch: number;
  atMs: number;
}

/**
 * Waits for a leader in a step, lets the step run a seeded 200–1500 ms, and — if that very step is still running —
 * calls `strike` on it (SIGKILL, SIGSTOP, step-down…). Tries the next step when the chosen one ended first.
 */
export async function catchLeaderMidStep(run: ScenarioRun, strike: (instance: ChaosInstance) => void | Promise<void>, timeoutMs = 40_000): Promise<CaughtLeader | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const leader = await run.cluster.waitForStepRunning(deadline - Date.now());
    const epoch = leader?.runningEpoch;
    if (leader === undefined || epoch === undefined) return undefined;
    await delay(run.random.int(200, 1500));
    if (leader.runningEpoch !== epoch || !leader.process.alive) continue;
    await strike(leader);
    return { instance: leader, epoch, atMs: Date.now() };
  }
  return undefined;
}

/** SIGKILLs the leader mid-step and records the fault (a leader must exist again soon after). */
export async function killLeaderMidStep(run: ScenarioRun, label: string): Promise<CaughtLeader | undefined> {
  const caught = await catchLeaderMidStep(run, (instance) => {
    instance.process.kill();
  });
  if (caught === undefined) {
    run.fail(`${label}: no leader was in a step to kill`);
    return undefined;
  }
  run.recordFault({ kind: "SIGKILL", target: caught.instance.id, startMs: caught.atMs, endMs: caught.atMs, leaderCheck: true }, { epoch: caught.epoch });
  run.options.log(`  ${label}: SIGKILL ${caught.instance.id} in its step of epoch ${caught.epoch}`);
  return caught;
}

/** Whether the log shows `instance`'s step of `epoch` never completing (it died or was stopped inside it). */
export function stepNeverCompleted(run: ScenarioRun, instance: string, epoch: number): boolean {
  return !run.cluster.records.some((record) => record.type === "step-completed" && record.instance === instance && record.epoch === epoch);
}

/** Waits for the next term begun after `afterMs` (by anyone but `except`); undefined after `timeoutMs`. */
export async function nextTermAfter(run: ScenarioRun, afterMs: number, except: string, timeoutMs = 30_000): Promise<number | undefined> {
  const record = await run.cluster.waitForEvent((candidate) => candidate.type === "lease-acquired" && candidate.instance !== except && Date.parse(candidate.ts) >= afterMs, timeoutMs);
  return record?.epoch;
}
