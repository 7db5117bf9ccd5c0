import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Sink } from "../../../src/app/context";
import { createRepoApp } from "../../support/repoKinds";
import { readSettings } from "../../../src/app/settings";
import { coordinationDeps, getJobStatus, submitJob } from "../../../src/app/operations";
import { runCoordinationStep } from "../../../src/coordination/step/step";
import { delay } from "../../../src/library/util/delay";
import { silentLogger } from "../../../src/library/util/logger";
import { InstanceProcess, type InstanceHandlers } from "../../../dev/src/local/instances";
import { instanceEnv, waitForReady } from "../../../dev/src/local/startup";
import { ensureAppStorage } from "../../../dev/src/local/storageSetup";
import type { Azurite } from "../../../dev/src/local/azurite";
import { REPO_APP } from "../../support/repoApp";
import { COMPILED_APP, compiledInstanceProcess } from "./compiledApp";
import { readCpuTimes } from "./throughput/cpuTimes";
import { scenarioJob } from "./throughput/scenarios";
import { startLoopSession, type LoopSession } from "./throughput/baselineSession";
import { appUnitItems } from "./throughput/units";

/* One run of `bench:instance` (./instance.ts): an instance of the app and a loop worker given the same jobs. */

/** The instance's timer: once a year, so only the benchmark's own steps lead. */
const NEVER_SCHEDULE = "0 0 0 1 1 *";
/** After a job completes, its last deletes and wake-ups are counted before the CPU is read. */
const SETTLE_MS = 500;
/** Between jobs the instance idles this long: its queue trigger backs off to host.json's 2 s. */
const IDLE_MS = 2000;

/** A set of Node flags for the app's instance. */
export interface FlagSet {
  name: string;
  nodeArguments: string;
}

/** The loop's side of a run. */
export const LOOP = "loop";

/** One side of a run. */
export interface Run {
  flagSet: string;
  /** The run (from 1) and the app's flag set it was paired with: the loop's side names the app's. */
  run: number;
  pairedWith: string;
  /** CPU of the instance per job, ms, in order: the first is its first job. */
  jobsCpuMs: number[];
  /** The job's step, from its start (the first dispatch) to the job's completion, ms. */
  jobsMs: number[];
}

/** What a run needs of the benchmark's arguments. */
export interface PairOptions {
  items: number;
  jobs: number;
  /** Run the app's instance from TypeScript sources under tsx instead of the compiled build. */
  fromSources: boolean;
}

const quiet: Sink = { logger: silentLogger, emit: () => undefined };

/** A process's CPU time so far (user + system, every thread), ms; Linux only. */
function cpuMsOf(pid: number | undefined): number {
  const times = pid === undefined ? undefined : readCpuTimes(pid);
  if (times === undefined) throw new Error("The instance's CPU time cannot be read (is it still running?).");
  return Math.round(times.cpuS * 1000);
}

/** The app's side of a run: a fresh instance process, and the benchmark's leader that gives it its jobs. */
async function startApp(azurite: Azurite, args: PairOptions, flagSet: FlagSet, setIndex: number, runIndex: number) {
  const { env, settings } = instanceEnv(
    { ...process.env, languageWorkers__node__arguments: flagSet.nodeArguments },
    azurite.connectionString,
    NEVER_SCHEDULE,
  );
  // Fresh container and queue names per run: nothing of an earlier run is left for this one.
  const suffix = `${runIndex}s${setIndex}`;
  const names = {
    LEASE_CONTAINER: `leases-bi${suffix}`,
    STATE_CONTAINER: `state-bi${suffix}`,
    INPUT_CONTAINER: `inputs-bi${suffix}`,
    SYSTEM_CONTAINER: `system-bi${suffix}`,
    WORK_QUEUE: `work-bi${suffix}`,
    RESULTS_QUEUE: `results-bi${suffix}`,
    WAKE_QUEUE: `wake-bi${suffix}`,
  };
  // Takeover off: the instance would otherwise take the lease from the benchmark whenever a submission or a leader
  // step held the benchmark's event loop past LEASE_TAKEOVER_DEADLINE_MS (it did, once, on this 2-core machine).
  const runEnv = { ...env, ...names, LEASE_TAKEOVER_DEADLINE_MS: "0" };
  await ensureAppStorage(azurite.connectionString, { ...settings, ...names });
  const handlers: InstanceHandlers = {
    onEvent: () => undefined,
    onLog: () => undefined,
    onReady: () => undefined,
    onExit: () => undefined,
  };
  // Compiled JS under plain Node, as in Azure (./compiledApp.ts); with --from-sources, TypeScript under tsx.
  const Instance = args.fromSources ? InstanceProcess : compiledInstanceProcess();
  const appFiles = args.fromSources ? REPO_APP : COMPILED_APP;
  const instance = new Instance("instance-1", { ...appFiles, ...runEnv }, handlers);
  const leader = createRepoApp({ ...runEnv, WEBSITE_INSTANCE_ID: "bench-instance-leader" });
  return { instance, leader };
}

/**
 * One run: a fresh instance of the app and a fresh loop worker, both started, given the same jobs one pair at a time
 * — the app's job 1 and the loop's job 1, then both jobs 2, who goes first alternating by job and by run — so that
 * the machine's load, which moves over seconds on a shared machine, weighs on both sides of each pair alike.
 */
export async function pairedRun(
  azurite: Azurite,
  args: PairOptions,
  flagSet: FlagSet,
  setIndex: number,
  runIndex: number,
): Promise<[Run, Run]> {
  const { instance, leader } = await startApp(azurite, args, flagSet, setIndex, runIndex);
  const pair = { run: runIndex + 1, pairedWith: flagSet.name };
  const app: Run = { flagSet: flagSet.name, ...pair, jobsCpuMs: [], jobsMs: [] };
  const loop: Run = { flagSet: LOOP, ...pair, jobsCpuMs: [], jobsMs: [] };
  const settings = readSettings({});
  let session: LoopSession | undefined;
  try {
    await ensureAppStorage(azurite.connectionString, settings);
    session = await startLoopSession({
      connectionString: azurite.connectionString,
      inputContainer: settings.INPUT_CONTAINER,
      label: `instance-${runIndex}-${setIndex}`,
      countsPrefix: join(tmpdir(), `bench-instance-${process.pid}`),
      workers: 1,
    });
    const loopSession = session;
    await waitForReady([instance], undefined);
    // One term for the whole run: the instance's wake-ups (sent as its units finish) always find the lease held, so it
    // never leads, between jobs either. Each job gets a step of its own within the term.
    const led = await leader.elector.tryLead(async (term) => {
      const appJob = async (index: number): Promise<void> => {
        const job = scenarioJob("small", args.items, "unused", 20_260_501 + index);
        const submitted = await submitJob(
          leader,
          { kind: job.kind, params: job.params, items: job.items },
          { wake: false },
        );
        if (!submitted.ok) throw new Error(`The job was refused: ${JSON.stringify(submitted.errors)}`);
        // The instance idles before each job (its queue polling backs off), as between a deployed app's jobs.
        term.reportProgress();
        await delay(IDLE_MS, { abortSignal: term.signal });
        term.reportProgress();
        const before = cpuMsOf(instance.state.pid);
        const startedMs = performance.now();
        // Dispatches the job and folds its results until it completes.
        await runCoordinationStep(coordinationDeps(leader, quiet), term, { budgetMs: 120_000 });
        const status = await getJobStatus(leader, submitted.id);
        if (status?.status !== "completed")
          throw new Error(`Job ${index + 1} did not complete in its step (${status?.status ?? "?"}).`);
        app.jobsMs.push(performance.now() - startedMs);
        await delay(SETTLE_MS, { abortSignal: term.signal });
        app.jobsCpuMs.push(cpuMsOf(instance.state.pid) - before);
        term.reportProgress();
      };
      const loopJob = async (index: number): Promise<void> => {
        const job = scenarioJob("small", args.items, "unused", 20_260_501 + index);
        await delay(IDLE_MS, { abortSignal: term.signal });
        const limits = { maxItems: appUnitItems(settings, job.items), maxBytes: settings.WORK_UNIT_MAX_BYTES };
        const { cpuMs, ms } = await loopSession.runJob(job, limits, {
          settleMs: SETTLE_MS,
          abortSignal: term.signal,
        });
        loop.jobsCpuMs.push(cpuMs);
        loop.jobsMs.push(ms);
        term.reportProgress();
      };
      for (let index = 0; index < args.jobs; index++) {
        const order = (index + runIndex) % 2 === 0 ? [appJob, loopJob] : [loopJob, appJob];
        for (const side of order) await side(index);
      }
    });
    if (led.outcome === "aborted")
      throw new Error(
        `The benchmark's term ended before its jobs did (${led.reason}${led.error === undefined ? "" : `: ${led.error instanceof Error ? led.error.message : JSON.stringify(led.error)}`}).`,
      );
    if (led.outcome !== "completed") throw new Error(`The benchmark could not lead: ${led.outcome}.`);
  } finally {
    await Promise.all([instance.stop(35_000), session?.stop()]);
  }
  return [app, loop];
}
