import { delay } from "../../../../src/library/util/delay";
import type { EventRecord } from "../../../../dev/src/local/eventLog";
import type { ChaosInstance } from "../cluster";
import { writesOfEpochAfter } from "../invariants";
import type { ScenarioRun } from "../scenario";

/** Fault helpers several scenarios share. */

/** A leader caught in a step. */
export interface CaughtLeader {
  instance: ChaosInstance;
  epoch: number;
  atMs: number;
}

/**
 * Waits for a step that has `jobId` to work on and strikes it mid-step, decided from the event log alone: from
 * record `fromIndex` on, takes the step that registers the job, or any step begun after it, lets it run a seeded
 * 200–1500 ms, and calls `strike` if the log shows that very step still running (no step-completed/aborted, no exit)
 * and the job not completed. A step without an active job ends within milliseconds, so catching "any" step races the
 * job's completion; this waits for one that has work. Only instances `accept` takes are struck. Undefined when the job
 * completed first or `timeoutMs` passed.
 */
export async function catchStepWithJob(
  run: ScenarioRun,
  jobId: string,
  fromIndex: number,
  strike: (instance: ChaosInstance) => void | Promise<void>,
  timeoutMs = 40_000,
  accept: (instance: ChaosInstance) => boolean = () => true,
): Promise<CaughtLeader | undefined> {
  const { cluster } = run;
  const deadline = Date.now() + timeoutMs;
  const tried = new Set<string>();
  let index = fromIndex;
  while (Date.now() < deadline) {
    const candidate = await cluster.waitForEvent(
      (record) => record.type === "step-started" || (record.type === "job-registered" && record.jobId === jobId),
      deadline - Date.now(),
      index,
    );
    if (candidate === undefined || jobCompleted(run, jobId)) return undefined;
    index = cluster.records.indexOf(candidate, index) + 1;
    const { instance: id, epoch } = candidate;
    if (epoch === undefined || tried.has(`${id}@${epoch}`)) continue;
    tried.add(`${id}@${epoch}`);
    await delay(run.random.int(200, 1500));
    const instance = cluster.instances.find((candidateInstance) => candidateInstance.id === id);
    if (
      instance === undefined ||
      !instance.process.alive ||
      instance.frozen ||
      !accept(instance) ||
      jobCompleted(run, jobId) ||
      !stepStillRunning(cluster.records, id, epoch)
    )
      continue;
    await strike(instance);
    return { instance, epoch, atMs: Date.now() };
  }
  return undefined;
}

/** {@link catchStepWithJob} with SIGSTOP as the strike: the caught instance is frozen, and marked so. */
export function freezeStepWithJob(
  run: ScenarioRun,
  jobId: string,
  fromIndex: number,
): Promise<CaughtLeader | undefined> {
  return catchStepWithJob(run, jobId, fromIndex, (instance) => {
    instance.process.signal("SIGSTOP");
    instance.frozen = true;
  });
}

/** What came of a frozen step: who took over meanwhile, when it woke, how its step ended. */
export interface Thawed {
  /** The first lease-acquired of a higher epoch by another instance during the freeze. */
  successor: EventRecord | undefined;
  resumedAt: number;
  /** The frozen step's step-completed or step-aborted, logged within 15 s of waking. */
  ended: EventRecord | undefined;
}

/**
 * Keeps a step {@link freezeStepWithJob} froze frozen until `freezeMs` after the strike, watching the log from record
 * `fromIndex` on for a successor; then thaws it (SIGCONT), records the freeze and the fault, and waits up to 15 s for
 * its step to end. After the jobs, every version stored with the frozen epoch after it woke is a stale write, failing
 * the run as `who`'s ("the zombie", "the frozen leader").
 */
export async function thawAfter(
  run: ScenarioRun,
  caught: CaughtLeader,
  freezeMs: number,
  fromIndex: number,
  who: string,
): Promise<Thawed> {
  const { cluster } = run;
  const { instance, epoch, atMs: frozenAt } = caught;
  const successor = await cluster.waitForEvent(
    (record) =>
      record.type === "lease-acquired" &&
      record.instance !== instance.id &&
      (record.epoch ?? 0) > epoch &&
      Date.parse(record.ts) >= frozenAt,
    freezeMs,
    fromIndex,
  );
  await delay(Math.max(0, frozenAt + freezeMs - Date.now()));
  const wokeAt = cluster.records.length;
  instance.process.signal("SIGCONT");
  instance.frozen = false;
  const resumedAt = Date.now();
  run.options.log(`  SIGCONT ${instance.id}`);
  run.freezes.push({ instance: instance.id, fromMs: frozenAt, toMs: resumedAt });
  run.recordFault(
    { kind: "SIGSTOP", target: instance.id, startMs: frozenAt, endMs: resumedAt, leaderCheck: true },
    { epoch, frozenMs: resumedAt - frozenAt },
  );
  const ended = await cluster.waitForEvent(
    (record) =>
      record.instance === instance.id &&
      record.epoch === epoch &&
      (record.type === "step-completed" || record.type === "step-aborted"),
    15_000,
    wokeAt,
  );
  run.afterJobs.push(() => {
    const late = writesOfEpochAfter(run.observer.versions, epoch, resumedAt);
    run.staleWrites += late.length;
    for (const version of late) run.fail(`${who}'s epoch ${epoch} wrote ${version.key} after it woke`);
    return Promise.resolve();
  });
  return { successor, resumedAt, ended };
}

/** Whether the event log shows the job completed. */
export function jobCompleted(run: ScenarioRun, jobId: string): boolean {
  return run.cluster.records.some((record) => record.type === "job-completed" && record.jobId === jobId);
}

/** Whether the log shows `instance`'s step of `epoch` begun and not yet ended (nor the instance exited). */
export function stepStillRunning(records: readonly EventRecord[], instance: string, epoch: number): boolean {
  let started = false;
  for (const record of records) {
    if (record.instance !== instance) continue;
    if (record.type === "instance-exited") return false;
    if (record.epoch !== epoch) continue;
    if (record.type === "step-started") started = true;
    if (record.type === "step-completed" || record.type === "step-aborted") return false;
  }
  return started;
}

/**
 * SIGKILLs the leader mid-step and records the fault (a leader must exist again soon after). Only a step that has
 * `job` (its id and the event-log index it was submitted at) to work on is struck: with work units and wake-ups a job
 * can finish within one short step, and the idle steps after it end in milliseconds.
 */
export async function killLeaderMidStep(
  run: ScenarioRun,
  label: string,
  job: { id: string; fromIndex: number },
): Promise<CaughtLeader | undefined> {
  const kill = (instance: ChaosInstance): void => {
    instance.process.kill();
  };
  const caught = await catchStepWithJob(run, job.id, job.fromIndex, kill);
  if (caught === undefined) {
    run.fail(
      `${label}: no leader was in a step to kill${jobCompleted(run, job.id) ? " (the job completed first)" : " with the job to work on"}`,
    );
    return undefined;
  }
  run.recordFault(
    { kind: "SIGKILL", target: caught.instance.id, startMs: caught.atMs, endMs: caught.atMs, leaderCheck: true },
    { epoch: caught.epoch },
  );
  run.options.log(`  ${label}: SIGKILL ${caught.instance.id} in its step of epoch ${caught.epoch}`);
  return caught;
}

/** Whether the log shows `instance`'s step of `epoch` never completing (it died or was stopped inside it). */
export function stepNeverCompleted(run: ScenarioRun, instance: string, epoch: number): boolean {
  return !run.cluster.records.some(
    (record) => record.type === "step-completed" && record.instance === instance && record.epoch === epoch,
  );
}

/** Waits for the next term begun after `afterMs` (by anyone but `except`); undefined after `timeoutMs`. */
export async function nextTermAfter(
  run: ScenarioRun,
  afterMs: number,
  except: string,
  timeoutMs = 30_000,
): Promise<number | undefined> {
  const record = await run.cluster.waitForEvent(
    (candidate) =>
      candidate.type === "lease-acquired" && candidate.instance !== except && Date.parse(candidate.ts) >= afterMs,
    timeoutMs,
  );
  return record?.epoch;
}
