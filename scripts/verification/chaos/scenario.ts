import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { delay } from "../../../src/library/util/delay";
import { renderTimeline } from "../../../dev/src/local/timeline";
import { ChaosCluster, type ChaosInstance } from "./cluster";
import {
  epochOrderViolations,
  epochsNotIncreasing,
  leaderAgainAfterMs,
  overlappingSteps,
  stepIntervals,
  takeoversByBreak,
  type FreezeWindow,
} from "./invariants";
import { JobTracker, type JobVerdict } from "./jobs";
import { StateObserver } from "./observer";
import { SeededRandom } from "./random";
import type { TaskRegistry } from "../../../src/coordination/kinds/taskRegistry";

/**
 * What every scenario shares: start the cluster and the state observer, run the scenario's faults, wait for its jobs,
 * then check the invariants every scenario must keep — no overlapping steps, the fencing rule on the stored state,
 * epochs increasing, a leader again soon after each leadership fault, every good item counted once and every bad one
 * reported — and draw the timeline.
 */

/** How a scenario is run. */
export interface ScenarioOptions {
  seed: number;
  /** CI mode: fewer rounds, shorter waits. */
  quick: boolean;
  /** Overrides the scenario's number of rounds where it has rounds. */
  rounds?: number;
  /** Folder of the timeline SVGs, event logs and instance logs. */
  outDir: string;
  /** Progress lines for a person. */
  log: (line: string) => void;
}

/** Violation counts of one scenario (the suite sums them). */
export interface InvariantCounts {
  overlappingSteps: number;
  lostItems: number;
  doubleCounted: number;
  unreportedBadItems: number;
  /** Stored versions breaking the fencing rule, or written by a zombie after it woke. */
  staleWrites: number;
  /** Leadership faults after which no leader came within lease duration + one tick + slack. */
  lateLeaders: number;
}

/** The outcome of one scenario. */
export interface ScenarioResult {
  name: string;
  faultsInjected: number;
  passed: boolean;
  durationMs: number;
  invariants: InvariantCounts;
  /** Terms that began after a takeover (the previous holder's lease broken after it fell silent). Not a violation. */
  takeoversByBreak: number;
  violations: string[];
  details: Record<string, unknown>;
  timelinePath: string;
  eventsPath: string;
}

/** An injected fault; `leaderCheck` when a leader must exist again soon after it ends. */
export interface Fault {
  kind: string;
  target: string;
  startMs: number;
  endMs: number;
  leaderCheck: boolean;
  /** How many faults this record stands for (e.g. messages of a flood). @default 1 */
  count?: number;
}

/**
 * Slack on "a leader again within lease duration + one tick": process scheduling and request latency on a 2-core
 * machine.
 */
export const LEADER_AGAIN_SLACK_MS = 3000;
/** One coordinator tick (CHAOS_APP_SETTINGS schedule). */
export const TICK_MS = 10_000;

/** The live state of a scenario, handed to its body. */
export class ScenarioRun {
  readonly violations: string[] = [];
  readonly details: Record<string, unknown> = {};
  readonly faults: Fault[] = [];
  readonly freezes: FreezeWindow[] = [];
  /** Checks run after the jobs completed, before the cluster stops (e.g. counting poison queues). */
  readonly afterJobs: (() => Promise<void>)[] = [];
  unreportedBadItems = 0;
  staleWrites = 0;
  /** How long to wait for the jobs after the faults. @default 120000 */
  completionTimeoutMs = 120_000;

  constructor(
    readonly cluster: ChaosCluster,
    readonly observer: StateObserver,
    readonly jobs: JobTracker,
    readonly random: SeededRandom,
    readonly options: ScenarioOptions,
  ) {}

  /** Starts `count` instances named `<prefix>-1…` with extra settings, and waits until they are ready. */
  async startInstances(prefix: string, count: number, env: Record<string, string> = {}): Promise<ChaosInstance[]> {
    const started = Array.from({ length: count }, (_, index) =>
      this.cluster.startInstance(`${prefix}-${index + 1}`, env),
    );
    await this.cluster.waitReady(started);
    return started;
  }

  /** Records a fault (also in the event log, so the timeline shows it). */
  recordFault(fault: Fault, fields: Record<string, unknown> = {}): void {
    this.faults.push(fault);
    this.cluster.note(fault.target, "chaos-fault", {
      fault: fault.kind,
      startTs: new Date(fault.startMs).toISOString(),
      ...fields,
    });
  }

  /** Adds a violation (the scenario fails) and logs it. */
  fail(message: string): void {
    this.violations.push(message);
    this.options.log(`  ✗ ${message}`);
  }
}

/**
 * Runs one scenario body in a fresh cluster and checks the shared invariants. Never throws: failures are violations.
 */
export async function runScenario(
  name: string,
  options: ScenarioOptions,
  body: (run: ScenarioRun) => Promise<void>,
  env: Record<string, string> = {},
  /** The kinds the scenario's client knows (its instances' app must register them too). @default this repository's */
  registry?: TaskRegistry,
): Promise<ScenarioResult> {
  const startedMs = Date.now();
  mkdirSync(options.outDir, { recursive: true });
  const eventsPath = join(options.outDir, `chaos-${name}.events.jsonl`);
  const timelinePath = join(options.outDir, `chaos-${name}.svg`);
  const logsDir = join(options.outDir, `chaos-${name}-logs`);
  rmSync(eventsPath, { force: true });
  rmSync(logsDir, { recursive: true, force: true });
  const cluster = await ChaosCluster.start({ eventsPath, logsDir, env });
  const blobs = BlobServiceClient.fromConnectionString(cluster.azurite.connectionString);
  const observer = new StateObserver(blobs.getContainerClient(cluster.settings.STATE_CONTAINER));
  const jobs = new JobTracker(
    cluster.client({}, registry === undefined ? {} : { registry }),
    blobs.getContainerClient(cluster.settings.INPUT_CONTAINER),
  );
  const run = new ScenarioRun(cluster, observer, jobs, new SeededRandom(options.seed).fork(hash(name)), options);
  let verdicts: JobVerdict[] = [];
  observer.start();
  try {
    await body(run);
    if (!(await jobs.waitAllCompleted(run.completionTimeoutMs)))
      run.fail(`jobs did not complete within ${run.completionTimeoutMs / 1000} s after the faults`);
    // A few more ticks: late duplicates and stale writers get their chance to (wrongly) change something.
    await delay(3 * TICK_MS);
    for (const check of run.afterJobs) await check();
    verdicts = await jobs.verdicts();
  } catch (error) {
    run.fail(`scenario error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  } finally {
    await observer.stop();
    await cluster.stop().catch((error: unknown) => run.fail(`stopping the cluster: ${String(error)}`));
  }
  const result = check(name, run, verdicts, Date.now() - startedMs, { eventsPath, timelinePath });
  writeFileSync(
    timelinePath,
    renderTimeline(cluster.records, {
      title: `Chaos: ${name} (seed ${options.seed}${options.quick ? ", quick" : ""}) — ${result.passed ? "passed" : "FAILED"}`,
    }),
  );
  return result;
}

function check(
  name: string,
  run: ScenarioRun,
  verdicts: readonly JobVerdict[],
  durationMs: number,
  paths: { eventsPath: string; timelinePath: string },
): ScenarioResult {
  const { cluster, observer } = run;
  const records = cluster.records;
  const endOfRunMs = Date.now();
  const takeoverDeadlineMs = cluster.settings.LEASE_TAKEOVER_DEADLINE_MS;
  const intervals = stepIntervals(records, {
    renewDeadlineMs: cluster.settings.LEASE_RENEW_DEADLINE_MS,
    ...(takeoverDeadlineMs > 0 ? { takeoverDeadlineMs } : {}),
    endOfRunMs,
    freezes: run.freezes,
  });
  const overlaps = overlappingSteps(intervals);
  for (const overlap of overlaps) run.fail(`overlapping steps: ${overlap}`);
  const misordered = epochOrderViolations(observer.versions);
  for (const problem of misordered) run.fail(`stored state: ${problem}`);
  for (const problem of epochsNotIncreasing(records)) run.fail(`epochs: ${problem}`);
  const boundMs = cluster.settings.LEASE_DURATION_SECONDS * 1000 + TICK_MS + LEADER_AGAIN_SLACK_MS;
  let lateLeaders = 0;
  const leaderAgain: (number | null)[] = [];
  for (const fault of run.faults.filter((candidate) => candidate.leaderCheck)) {
    const afterMs = leaderAgainAfterMs(records, fault.endMs, new Set([fault.target]), endOfRunMs);
    leaderAgain.push(afterMs ?? null);
    if (afterMs === undefined || afterMs > boundMs) {
      lateLeaders++;
      run.fail(
        `no leader within ${boundMs} ms after ${fault.kind} of ${fault.target} ended (${afterMs === undefined ? "none at all" : `${afterMs} ms`})`,
      );
    }
  }
  for (const verdict of verdicts) for (const problem of verdict.problems) run.fail(problem);
  const sum = (field: "lostItems" | "doubleCounted" | "unreportedBadItems"): number =>
    verdicts.reduce((total, verdict) => total + verdict[field], 0);
  const invariants: InvariantCounts = {
    overlappingSteps: overlaps.length,
    lostItems: sum("lostItems"),
    doubleCounted: sum("doubleCounted"),
    unreportedBadItems: sum("unreportedBadItems") + run.unreportedBadItems,
    staleWrites: misordered.length + run.staleWrites,
    lateLeaders,
  };
  const terms = records.filter((record) => record.type === "lease-acquired").length;
  return {
    name,
    faultsInjected: run.faults.reduce((total, fault) => total + (fault.count ?? 1), 0),
    passed: run.violations.length === 0,
    durationMs,
    invariants,
    takeoversByBreak: takeoversByBreak(records).length,
    violations: run.violations,
    details: {
      ...run.details,
      steps: intervals.length,
      terms,
      stateVersionsObserved: observer.versions.length,
      observerFailedPolls: observer.failedPolls,
      leaderAgainAfterMs: leaderAgain,
      leaderAgainBoundMs: boundMs,
      jobs: verdicts.map(({ label, status, done, failed, goodItems, badItems, aggregateMatches }) => ({
        label,
        status,
        done,
        failed,
        goodItems,
        badItems,
        aggregateMatches,
      })),
    },
    ...paths,
  };
}

function hash(text: string): number {
  let h = 2_166_136_261;
  for (const char of text) h = Math.imul(h ^ char.charCodeAt(0), 16_777_619);
  return h >>> 0;
}
