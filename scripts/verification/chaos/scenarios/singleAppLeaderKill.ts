import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { delay } from "../../../../src/library/util/delay";
import type { EventRecord } from "../../../../dev/src/local/eventLog";
import type { ChaosInstance } from "../cluster";
import { runScenario, TICK_MS, type ScenarioOptions, type ScenarioResult, type ScenarioRun } from "../scenario";
import { catchStepWithJob } from "./faults";

/**
 * Failover inside ONE function app. Three instances share an app name, so the host's timer listener lock lets only
 * one of them fire the coordinator's timer; the leader — preferably the instance holding that lock, the common case
 * with a one-minute timer — is SIGKILLed mid-step with a job running, round after round, in two phases of one run:
 *
 * - `wake-ups`: ACTIVITY_WAKE_INTERVAL_MS 5000 (the default): workers' results wake the coordinator on any instance,
 *   and a wake-up that finds the dead leader's lease sends a follow-up for when it has run out;
 * - `timer-only`: ACTIVITY_WAKE_INTERVAL_MS 0, LEADER_WATCH_INTERVAL_MS 0 and LEADER_SENTINEL_SECONDS 0: only the
 *   timer (and submissions) start steps, so after the lock holder died nothing happens until its listener lock has
 *   expired and a survivor's recovery poll takes it; the suite's 10 s tick fires more than once a minute, so the host
 *   keeps no schedule status for it, and the survivor waits for the next tick;
 * - `timer-only-minute` (full mode only): the same with the app's default schedule, once a minute (`0 * * * * *`),
 *   which the host monitors (issue 43): when the survivor takes the lock after a missed tick, it runs that tick at
 *   once (isPastDue), as the real host does (measured against the WebJobs SDK by `npm run conformance:host`).
 *
 * In the wake-ups phase the app's defaults include takeover (issue 22): the survivors' leader watchers, armed by their
 * worker invocations (or by the leader's sentinel: announced when the job registers, surfacing when the leader died),
 * see the dead leader fall silent, break its lease and send a wake-up, seconds after the kill; the new term sends the
 * dead leader's units in flight again.
 *
 * Each round waits until an instance holds the lock again (after a kill: the dead holder's lease plus a survivor's
 * poll) and submits its job without a wake-up, so the timer — the lock holder — starts it. Full mode: 5 rounds
 * each with the host's lock periods (60 s, 60 s). Quick mode: 1 round each, the timer-only phase
 * with the lock shortened (15 s lease, 5 s polling) so CI stays cheap. Measured per round, from the kill: the next
 * term (lease-acquired), the next step started and completed, and the job's completion. A replacement instance
 * starts after each round's job completed (as the platform would), so every kill has the same survivors. Printed,
 * in the scenario details, and written to `single-app-leader-kill.json` next to the suite report.
 */

/** One round's figures, seconds from the kill (null: did not happen before the round gave up). */
export interface FailoverRound {
  phase: Phase;
  round: number;
  killed: string;
  /** Whether the killed instance held the app's timer listener lock (so no survivor fired the timer). */
  killedHeldTimerLock: boolean;
  /**
   * Worker invocations the killed instance was running: their work units come back only after the host's message
   * visibility (10 s here), and the job cannot complete before.
   */
  killedWorkInFlight: number;
  nextTermS: number | null;
  nextStepStartedS: number | null;
  nextStepCompletedS: number | null;
  jobCompletedS: number | null;
}

type Phase = "wake-ups" | "timer-only" | "timer-only-minute";

/** The app's default COORDINATOR_SCHEDULE (settings.ts), for the timer-only-minute phase. */
const DEFAULT_SCHEDULE = "0 * * * * *";

/** Median and maximum of the rounds that have a value. */
export interface Spread {
  median: number | null;
  max: number | null;
  n: number;
}

const ITEMS_PER_JOB = 60;
/** Extra time each worker invocation (one unit of up to 8 items) takes, so a step is caught with its job running. */
const WORKER_DELAY_MS = 1000;
/**
 * Per round: the longest wait for a job to complete after the kill (timer-only with the host's periods: up to ~2 min;
 * with the one-minute schedule, a step a minute after that).
 */
const ROUND_TIMEOUT_MS = 300_000;

export function singleAppLeaderKillScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario("single-app-leader-kill", options, async (run) => {
    const rounds = options.rounds ?? (options.quick ? 1 : 5);
    const lock = options.quick ? { periodS: 15, recoveryS: 5 } : { periodS: 60, recoveryS: 60 };
    run.completionTimeoutMs = ROUND_TIMEOUT_MS;
    const figures: FailoverRound[] = [];
    const phases: Phase[] = options.quick
      ? ["wake-ups", "timer-only"]
      : ["wake-ups", "timer-only", "timer-only-minute"];
    for (const phase of phases) {
      const timerOnly = phase !== "wake-ups";
      const phaseLock = phase === "timer-only" ? lock : { periodS: 60, recoveryS: 60 };
      const env = {
        WEBSITE_SITE_NAME: `one-app-${phase}`,
        ACTIVITY_WAKE_INTERVAL_MS: timerOnly ? "0" : "5000",
        LEADER_WATCH_INTERVAL_MS: timerOnly ? "0" : "1000",
        // The leader's sentinel is a wake-up too: timer-only means none (a step ending with work left would chain the
        // next one through it).
        LEADER_SENTINEL_SECONDS: timerOnly ? "0" : "2",
        ...(phase === "timer-only-minute" ? { COORDINATOR_SCHEDULE: DEFAULT_SCHEDULE } : {}),
        LOCAL_LISTENER_LOCK_PERIOD_SECONDS: String(phaseLock.periodS),
        LOCAL_LISTENER_LOCK_RECOVERY_SECONDS: String(phaseLock.recoveryS),
        // Workers are paced, so the job is still being worked on when its step is caught 0.2–1.5 s in: unpaced, a job
        // of 60 items in units of 8 can finish within one short step first (a CI run failed "no step with the job was
        // caught running to kill", timer-only round 1, and so did 2 of 5 full-mode timer-only rounds once dispatch
        // sent the whole job in one pass). The figures after the kill include this pace: about 1 s of work.
        // Quick mode (CI) paces 3 s: at 1 s a CI-mode run still missed once (timer-only round 1).
        LOCAL_INVOKE_DELAY_MS: `worker=${options.quick ? 3 * WORKER_DELAY_MS : WORKER_DELAY_MS}`,
      };
      run.options.log(
        `  phase ${phase}: 3 instances of app ${env.WEBSITE_SITE_NAME}, listener lock ${phaseLock.periodS} s / polling ${phaseLock.recoveryS} s`,
      );
      const instances = await run.startInstances(phase, 3, env);
      let replacement = 4;
      for (let round = 1; round <= rounds; round++) {
        const result = await killRound(run, phase, round, instances, phaseLock.periodS + phaseLock.recoveryS);
        if (result === undefined) continue;
        figures.push(result);
        run.options.log(
          `  ${phase} round ${round}: killed ${result.killed}${result.killedHeldTimerLock ? " (held the timer lock)" : ""} with ${result.killedWorkInFlight} work unit(s) in flight; next term ${fmt(result.nextTermS)}, step completed ${fmt(result.nextStepCompletedS)}, job completed ${fmt(result.jobCompletedS)}`,
        );
        const started = run.cluster.startInstance(`${phase}-${replacement++}`, env);
        instances.push(started);
        await run.cluster.waitReady([started]);
      }
      // The next phase's instances must be the only ones firing timers and answering wake-ups.
      await Promise.all(instances.map((instance) => instance.process.stop(35_000)));
    }
    const summary = summarize(figures);
    Object.assign(run.details, {
      rounds,
      lockPeriodS: {
        wakeUps: { periodS: 60, recoveryS: 60 },
        timerOnly: lock,
        timerOnlyMinute: { periodS: 60, recoveryS: 60 },
      },
      figures,
      summary,
    });
    const path = join(options.outDir, "single-app-leader-kill.json");
    writeFileSync(
      path,
      `${JSON.stringify({ scenario: "single-app-leader-kill", quick: options.quick, seed: options.seed, rounds, itemsPerJob: ITEMS_PER_JOB, timerOnlyLock: lock, summary, figures }, null, 2)}\n`,
    );
    for (const line of formatSummary(summary)) run.options.log(`  ${line}`);
    run.options.log(`  figures: ${path}`);
  });
}

/** One round: a job, the leader killed mid-step with it, the timings after the kill. */
async function killRound(
  run: ScenarioRun,
  phase: Phase,
  round: number,
  instances: readonly ChaosInstance[],
  lockRecoveryBoundS: number,
): Promise<FailoverRound | undefined> {
  const { cluster } = run;
  const label = `${phase} round ${round}`;
  // After a kill the dead instance's timer lock is recovered only after its lease and a survivor's poll: wait for it,
  // so that every round kills a lock holder.
  const holder = await waitForLockHolder(instances, (lockRecoveryBoundS + 15) * 1000);
  if (holder === undefined) {
    run.fail(`${label}: no instance held the timer lock within ${lockRecoveryBoundS + 15} s`);
    return undefined;
  }
  const marker = cluster.records.length;
  // Without a submission wake-up: the timer, so the lock holder, starts the job — the leader the scenario is about.
  const job = await run.jobs.submitDemo(
    `${phase}-${round}`,
    ITEMS_PER_JOB,
    run.options.seed * 100 + round + (phase === "wake-ups" ? 0 : 50),
    { wake: false },
  );
  const ours = (instance: ChaosInstance): boolean => instances.includes(instance);
  let heldLock = false;
  let workInFlight = 0;
  const kill = (instance: ChaosInstance): void => {
    heldLock = instance.holdsTimerLock;
    workInFlight = instance.inFlight.size;
    instance.process.kill();
  };
  // The lock holder if it leads a step with the job within a tick and 20 s; otherwise whoever does.
  const catchMs = tickMsOf(phase) + 20_000;
  const caught =
    (await catchStepWithJob(
      run,
      job.id,
      marker,
      kill,
      catchMs,
      (instance) => ours(instance) && instance.holdsTimerLock,
    )) ?? (await catchStepWithJob(run, job.id, marker, kill, catchMs, ours));
  if (caught === undefined) {
    run.fail(`${label}: no step with the job was caught running to kill`);
    return undefined;
  }
  // Not a leader check of the shared invariant: timer-only failover is bounded by the listener lock, not the lease.
  run.recordFault(
    { kind: "SIGKILL", target: caught.instance.id, startMs: caught.atMs, endMs: caught.atMs, leaderCheck: false },
    { epoch: caught.epoch, phase, heldTimerLock: heldLock },
  );
  const killIndex = cluster.records.length;
  const after =
    (type: string, extra: (record: EventRecord) => boolean = () => true) =>
    (record: EventRecord) =>
      record.type === type &&
      record.instance !== caught.instance.id &&
      Date.parse(record.ts) >= caught.atMs &&
      extra(record);
  const completed = await cluster.waitForEvent(
    after("job-completed", (record) => record.jobId === job.id),
    ROUND_TIMEOUT_MS,
    killIndex,
  );
  // The step that completed the job ends just after it: wait for that step (its instance and epoch), not any other.
  if (completed !== undefined) {
    await cluster.waitForEvent(
      after("step-completed", (record) => record.instance === completed.instance && record.epoch === completed.epoch),
      30_000,
      cluster.records.indexOf(completed),
    );
  }
  const seconds = (record: EventRecord | undefined): number | null =>
    record === undefined ? null : Math.round(Date.parse(record.ts) - caught.atMs) / 1000;
  const first = (type: string): EventRecord | undefined => cluster.records.slice(killIndex).find(after(type));
  const result: FailoverRound = {
    phase,
    round,
    killed: caught.instance.id,
    killedHeldTimerLock: heldLock,
    killedWorkInFlight: workInFlight,
    nextTermS: seconds(first("lease-acquired")),
    nextStepStartedS: seconds(first("step-started")),
    nextStepCompletedS: seconds(first("step-completed")),
    jobCompletedS: seconds(completed),
  };
  // What each mechanism guarantees (not a speed target): a follow-up chain covers 3 lease durations after the last
  // activity; the timer needs the lock's expiry plus one recovery poll plus a tick.
  const leaseS = cluster.settings.LEASE_DURATION_SECONDS;
  const boundS = phase === "wake-ups" ? 3 * leaseS + 10 : lockRecoveryBoundS + leaseS + tickMsOf(phase) / 1000 + 10;
  if (result.nextTermS === null || result.nextTermS > boundS)
    run.fail(
      `${label}: no new term within ${boundS} s of the kill (${result.nextTermS === null ? "none" : `${result.nextTermS} s`})`,
    );
  if (completed === undefined)
    run.fail(`${label}: job ${job.id} did not complete within ${ROUND_TIMEOUT_MS / 1000} s of the kill`);
  return result;
}

/** The phase's tick: the suite's 10 s, or the app's default minute. */
function tickMsOf(phase: Phase): number {
  return phase === "timer-only-minute" ? 60_000 : TICK_MS;
}

/** The live instance that holds its app's timer listener lock, once one does; undefined after `timeoutMs`. */
async function waitForLockHolder(
  instances: readonly ChaosInstance[],
  timeoutMs: number,
): Promise<ChaosInstance | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const holder = instances.find((instance) => instance.process.alive && instance.holdsTimerLock);
    if (holder !== undefined || Date.now() > deadline) return holder;
    await delay(200);
  }
}

/** Median and max per phase and measure. */
export function summarize(
  figures: readonly FailoverRound[],
): Record<Phase, Record<"nextTermS" | "nextStepStartedS" | "nextStepCompletedS" | "jobCompletedS", Spread>> {
  const spread = (values: (number | null)[]): Spread => {
    const present = values.filter((value): value is number => value !== null).sort((a, b) => a - b);
    const mid = present.length / 2;
    const median =
      present.length === 0
        ? null
        : present.length % 2 === 1
          ? (present[Math.floor(mid)] ?? null)
          : ((present[mid - 1] ?? 0) + (present[mid] ?? 0)) / 2;
    return { median, max: present.at(-1) ?? null, n: present.length };
  };
  const ofPhase = (phase: Phase) => {
    const rows = figures.filter((row) => row.phase === phase);
    return {
      nextTermS: spread(rows.map((row) => row.nextTermS)),
      nextStepStartedS: spread(rows.map((row) => row.nextStepStartedS)),
      nextStepCompletedS: spread(rows.map((row) => row.nextStepCompletedS)),
      jobCompletedS: spread(rows.map((row) => row.jobCompletedS)),
    };
  };
  return {
    "wake-ups": ofPhase("wake-ups"),
    "timer-only": ofPhase("timer-only"),
    "timer-only-minute": ofPhase("timer-only-minute"),
  };
}

function formatSummary(summary: ReturnType<typeof summarize>): string[] {
  const cell = (spread: Spread): string => `${fmt(spread.median)} / ${fmt(spread.max)}`;
  const lines = ["kill → (median / max)   next term      step started   step completed  job completed"];
  for (const phase of ["wake-ups", "timer-only", "timer-only-minute"] as const) {
    const row = summary[phase];
    if (row.nextTermS.n === 0) continue;
    lines.push(
      `${phase.padEnd(22)}  ${[row.nextTermS, row.nextStepStartedS, row.nextStepCompletedS, row.jobCompletedS].map((spread) => cell(spread).padEnd(14)).join(" ")}`,
    );
  }
  return lines;
}

function fmt(value: number | null): string {
  return value === null ? "—" : `${value.toFixed(1)} s`;
}
