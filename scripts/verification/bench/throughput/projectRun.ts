import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createRepoApp } from "../../../support/repoKinds";
import { getJobStatus, hasEnded, submitJob, type JobStatus } from "../../../../src/app/jobs";
import { delay } from "../../../../src/library/util/delay";
import { aggregatesMatch, asAggregate } from "../../../../dev/src/local/demoData";
import { InstanceProcess, type InstanceHandlers } from "../../../../dev/src/local/instances";
import { instanceEnv, waitForReady } from "../../../../dev/src/local/startup";
import { REPO_APP } from "../../../support/repoApp";
import { billedGbSeconds, perExecutionGbSeconds } from "./cost";
import { readCpuTimes, type CpuTimes } from "./cpuTimes";
import { RequestCounter, queueEndpointOf, readCountFiles, type RequestCount } from "./requestCounter";
import type { ScenarioJob } from "./scenarios";

/**
 * One project run: fresh instance processes of the real app on the local host (the real Functions registrations,
 * timer on the given schedule, queue triggers with host.json's settings), one job submitted through the library
 * (`submitJob`, which also wakes the coordinator, as HTTP and the CLI do). Measures, from the start of the submission:
 * the first dispatch (status polled every 50 ms until `dispatched > 0`, then every 500 ms), and completion (the
 * leader's `completedAt`). Counts every storage request of the instances and the submission (./requestCounter.ts;
 * the benchmark's status polls are not counted), every function execution (the host's "Executing" lines) and their
 * billed time. With `memory`, also each instance's idle RSS before the submission and its peak during the job. Writes
 * the run's timeline — the submission, every app event and every invocation, in ms from the submission's start — to
 * `timeline-<label>.json` in the output folder, beside the request counts (./requestCounter.ts), to read a slow round.
 */

/** Requests this long after completion still count (the last messages' deletes). */
export const TAIL_MS = 400;
/**
 * After completion the instances run on until none has started or run an invocation for this long: what the job still
 * causes — wake-ups that found the lease held send follow-ups, visible one ACTIVITY_WAKE_INTERVAL_MS (5 s) later and
 * then polled within the host's 2 s, and each runs a step — counts, with the instances' idle polling meanwhile.
 */
export const QUIET_MS = 8000;
/** The longest the instances are watched after completion for {@link QUIET_MS} of quiet. */
const MAX_TRAIL_MS = 60_000;
const FAST_POLL_MS = 50;
const SLOW_POLL_MS = 500;
const INSTANCE_STOP_TIMEOUT_MS = 35_000;

/** Options of {@link runProject}. */
export interface ProjectRunOptions {
  connectionString: string;
  /**
   * Where the benchmark's status polls go: a connection string to the same storage that no counter sees (bench:peer's
   * proxy counts every request through `connectionString`). @default connectionString
   */
  pollConnectionString?: string;
  /** The job: inline or blob items, or a manifest blob already in the input container. */
  job: ScenarioJob;
  manifest?: string;
  instances: number;
  schedule: string;
  /** Extra app settings for the instances. */
  settings?: Record<string, string>;
  outputDir: string;
  label: string;
  maxWaitS: number;
  /**
   * How long the instances run idle after they are all ready before the submission (default 0: submitted at once). At
   * IDLE_LOOP_MS their queue triggers' back-off waits its longest, as a deployed app's idle instances' does.
   */
  idleBeforeSubmitMs?: number;
  /**
   * Measure the instances' memory: idle RSS after `memoryIdleWaitS`, then the peak during the job; and the live heap
   * after a full collection (`heapSampler.ts`) at the start, every {@link HEAP_SAMPLE_INTERVAL_MS} through the job
   * and at its end.
   */
  memory?: { idleWaitS: number };
  /** Read each instance's peak RSS (VmHWM, since it started) at the end, without `memory`'s idle wait. */
  peakRss?: boolean;
  abortSignal: AbortSignal;
  log: (line: string) => void;
}

/** What one instance did. */
export interface InstanceReport {
  name: string;
  pid: number | undefined;
  /** Terms it started during the job (lease-acquired events). */
  termsLed: number;
  idleRssMiB?: number;
  peakRssMiB?: number;
  /** With `memory`: the live heap after a full collection, sampled through the job (MiB), first at its start. */
  heapMiB?: { atMs: number; heapUsedMiB: number; rssMiB: number }[];
  /**
   * CPU time of the process (every thread: user + system) in the run's counting window — from the submission's start
   * to {@link TAIL_MS} after the last invocation, as its requests (sampled every 200 ms after completion; the first
   * sample at or after the window's end) —, s; and how long its main thread (the event loop) waited in the run queue
   * for a core meanwhile, s: time the machine's cores were busy with other threads (of other processes on this shared
   * machine, or the process's own), which an instance with cores of its own would mostly not wait.
   */
  cpuS?: number;
  runQueueWaitS?: number;
}

/** What a project run measured. */
export interface ProjectRunResult {
  ok: boolean;
  problem: string | undefined;
  items: number;
  jobId: string | undefined;
  submitStartMs: number;
  firstDispatchMs: number | undefined;
  completedAtMs: number | undefined;
  submitToFirstDispatchS: number | undefined;
  submitToCompletedS: number | undefined;
  itemsPerS: number | undefined;
  matches: boolean;
  /** Requests of the instances and the submission, from the submission's start to {@link TAIL_MS} after completion. */
  counts: RequestCount[];
  /** Function executions in the same window, by function. */
  executions: Record<string, number>;
  /** Billed execution time of those executions (estimate, see ./cost.ts billedGbSeconds). */
  gbSeconds: number;
  /** The same if each execution were billed alone (./cost.ts perExecutionGbSeconds): the upper bound. */
  gbSecondsUpper: number;
  instances: InstanceReport[];
  status: JobStatus | undefined;
  /** The counting window of `counts`, ms since the epoch: [fromMs, toMs). */
  countWindow: { fromMs: number; toMs: number };
}

interface Invocation {
  instance: string;
  functionName: string;
  startMs: number;
  endMs?: number;
}

/** The preload that counts an instance's storage requests. */
const COUNT_REQUESTS = resolve(__dirname, "countRequests.ts");
/** The preload that samples an instance's live heap after a full collection, on SIGUSR2. */
const HEAP_SAMPLER = resolve(__dirname, "heapSampler.ts");
/** How often the live heap is sampled during a memory run. */
export const HEAP_SAMPLE_INTERVAL_MS = 5000;

const EXECUTING = /^Executing 'Functions\.([^']+)' \(Reason='.*', Id=([^)]+)\)$/;
const EXECUTED = /^Executed 'Functions\.([^']+)' \((?:Succeeded|Failed), Id=([^,]+), Duration=(\d+)ms\)/;

/** The app the benchmark polls the job's status through (not an instance: its requests are not the job's). */
export function statusPoller(env: Record<string, string | undefined>, pollConnectionString?: string) {
  const storage =
    pollConnectionString === undefined
      ? {}
      : { COORDINATION_STORAGE: pollConnectionString, AzureWebJobsStorage: pollConnectionString };
  return createRepoApp({ ...env, ...storage, WEBSITE_INSTANCE_ID: "bench-poller" });
}

/** Runs the project once. Never throws for a failed job: `ok` and `problem` say. */
export async function runProject(options: ProjectRunOptions): Promise<ProjectRunResult> {
  const { env } = instanceEnv({ ...process.env, ...options.settings }, options.connectionString, options.schedule);
  const countsFiles: string[] = [];
  const invocations = new Map<string, Invocation>();
  const leaseAcquired: { instance: string; atMs: number }[] = [];
  const events: { instance: string; type: string; atMs: number; fields: Record<string, unknown> }[] = [];
  const handlers: InstanceHandlers = {
    onEvent: (instance, line) => {
      if (line.type === "lease-acquired") leaseAcquired.push({ instance: instance.name, atMs: Date.now() });
      const skip = new Set(["kind", "pid", "type", "atMs", "instanceId"]);
      const fields = Object.fromEntries(Object.entries(line).filter(([key]) => !skip.has(key)));
      events.push({ instance: instance.name, type: line.type, atMs: line.atMs, fields });
    },
    onLog: (instance, line) => {
      const started = EXECUTING.exec(line.message);
      if (started?.[1] !== undefined && started[2] !== undefined) {
        invocations.set(started[2], {
          instance: instance.name,
          functionName: started[1],
          startMs: Date.parse(line.ts),
        });
        return;
      }
      const ended = EXECUTED.exec(line.message);
      const invocation = ended?.[2] === undefined ? undefined : invocations.get(ended[2]);
      if (invocation !== undefined) invocation.endMs = Date.parse(line.ts);
    },
    onReady: () => undefined,
    onExit: () => undefined,
  };
  const instances: InstanceProcess[] = [];
  const heapFiles = new Map<string, string>();
  for (let index = 1; index <= options.instances; index++) {
    const name = `instance-${index}`;
    const countsFile = join(options.outputDir, `requests-${options.label}-${name}.jsonl`);
    countsFiles.push(countsFile);
    const heapFile = join(options.outputDir, `heap-${options.label}-${name}.jsonl`);
    if (options.memory !== undefined) heapFiles.set(name, heapFile);
    // Counted from before the app's first client: a module preloaded with the instance's Node flags.
    const heapSampler = options.memory === undefined ? "" : ` --expose-gc --import ${HEAP_SAMPLER}`;
    const nodeArguments = `${env.languageWorkers__node__arguments ?? ""} --import ${COUNT_REQUESTS}${heapSampler}`;
    instances.push(
      new InstanceProcess(
        name,
        {
          ...REPO_APP,
          ...env,
          LOCAL_REQUEST_COUNTS_FILE: countsFile,
          ...(options.memory === undefined ? {} : { LOCAL_HEAP_SAMPLES_FILE: heapFile }),
          languageWorkers__node__arguments: nodeArguments,
        },
        handlers,
      ),
    );
  }
  // Each instance collects its garbage and notes its live heap (heapSampler.ts); the file is read at the end.
  let heapSampledMs = 0;
  const sampleHeap = (force = false): void => {
    if (options.memory === undefined || (!force && Date.now() - heapSampledMs < HEAP_SAMPLE_INTERVAL_MS)) return;
    heapSampledMs = Date.now();
    for (const instance of instances)
      if (instance.alive && instance.state.pid !== undefined) process.kill(instance.state.pid, "SIGUSR2");
  };
  const submitCounter = new RequestCounter("submitter", queueEndpointOf(options.connectionString));
  const submitter = createRepoApp(
    { ...env, WEBSITE_INSTANCE_ID: "bench-submitter" },
    { policies: [submitCounter.policy] },
  );
  const poller = statusPoller(env, options.pollConnectionString);
  const reports: InstanceReport[] = [];
  const cpuSamples: { atMs: number; byInstance: Map<string, CpuTimes> }[] = [];
  const sampleCpu = (): void => {
    const byInstance = new Map<string, CpuTimes>();
    for (const instance of instances) {
      const times = instance.state.pid === undefined ? undefined : readCpuTimes(instance.state.pid);
      if (times !== undefined) byInstance.set(instance.state.name, times);
    }
    cpuSamples.push({ atMs: Date.now(), byInstance });
  };
  let problem: string | undefined;
  let jobId: string | undefined;
  let status: JobStatus | undefined;
  let firstDispatchMs: number | undefined;
  let submittedMs: number | undefined;
  let quietAtMs: number | undefined;
  let submitStartMs = Date.now();
  try {
    await waitForReady(instances, options.abortSignal);
    if ((options.idleBeforeSubmitMs ?? 0) > 0)
      await delay(options.idleBeforeSubmitMs ?? 0, { abortSignal: options.abortSignal });
    const idle = new Map<string, number>();
    if (options.memory !== undefined) {
      options.log(`  waiting ${options.memory.idleWaitS} s for the instances to idle (a timer tick included)…`);
      await delay(options.memory.idleWaitS * 1000, { abortSignal: options.abortSignal });
      for (const instance of instances) {
        const pid = instance.state.pid;
        const rss = pid === undefined ? undefined : readRssKiB(pid, "VmRSS");
        if (rss !== undefined) idle.set(instance.state.name, rss);
        // From here on VmHWM is the peak since the submission (Linux: clear_refs 5 resets it).
        if (pid !== undefined) resetPeakRss(pid);
      }
      sampleHeap(true);
      await delay(1000, { abortSignal: options.abortSignal }); // the collections take a moment
    }
    const body =
      options.manifest !== undefined
        ? { kind: options.job.kind, params: options.job.params, manifest: options.manifest }
        : { kind: options.job.kind, params: options.job.params, items: options.job.items };
    submitCounter.take();
    sampleCpu();
    submitStartMs = Date.now();
    const submitted = await submitJob(submitter, body, { abortSignal: options.abortSignal });
    submittedMs = Date.now();
    if (!submitted.ok)
      throw new Error(
        `The app rejected the job: ${submitted.errors.map((error) => `${error.field}: ${error.message}`).join("; ")}`,
      );
    jobId = submitted.id;
    const deadline = submitStartMs + options.maxWaitS * 1000;
    for (;;) {
      status = await getJobStatus(poller, jobId, { abortSignal: options.abortSignal });
      if (firstDispatchMs === undefined && (status?.progress.dispatched ?? 0) > 0) firstDispatchMs = Date.now();
      if (status !== undefined && hasEnded(status.status)) break;
      sampleHeap();
      if (Date.now() > deadline)
        throw new Error(
          `The job did not end within ${options.maxWaitS} s (status ${status?.status ?? "unknown"}, ${status?.progress.done ?? 0} of ${options.job.items.length} done).`,
        );
      await delay(firstDispatchMs === undefined ? FAST_POLL_MS : SLOW_POLL_MS, { abortSignal: options.abortSignal });
    }
    if (status.status !== "completed")
      problem = `The job ended as ${status.status}${status.failureReason === undefined ? "" : `: ${status.failureReason}`}.`;
    // What the job still causes after completion (follow-up wake-ups and their steps), until the instances are quiet.
    const trailEndMs = Date.now() + MAX_TRAIL_MS;
    for (;;) {
      const lastActivityMs = Math.max(
        0,
        ...[...invocations.values()].map((invocation) => invocation.endMs ?? Number.POSITIVE_INFINITY),
      );
      sampleCpu();
      if (Date.now() - lastActivityMs >= QUIET_MS || Date.now() >= trailEndMs) break;
      await delay(200, { abortSignal: options.abortSignal });
    }
    quietAtMs = Date.now();
    sampleHeap(true); // the job's end
    // The last deletes, and the instances' last count flushes.
    await delay(TAIL_MS + 1000, { abortSignal: options.abortSignal });
    for (const instance of instances) {
      const pid = instance.state.pid;
      reports.push({
        name: instance.state.name,
        pid,
        termsLed: 0,
        ...(options.memory === undefined || pid === undefined
          ? {}
          : { idleRssMiB: mib(idle.get(instance.state.name)), peakRssMiB: mib(readRssKiB(pid, "VmHWM")) }),
        ...(options.memory === undefined && options.peakRss === true && pid !== undefined
          ? { peakRssMiB: mib(readRssKiB(pid, "VmHWM")) }
          : {}),
        ...(heapFiles.has(instance.state.name) ? { heapMiB: readHeapSamples(heapFiles.get(instance.state.name)) } : {}),
      });
    }
  } catch (error) {
    problem = options.abortSignal.aborted ? "Interrupted." : (error as Error).message;
  } finally {
    await Promise.all(instances.map((instance) => instance.stop(INSTANCE_STOP_TIMEOUT_MS)));
  }
  const completedAtMs = status?.completedAt === undefined ? undefined : Date.parse(status.completedAt);
  const fromMs = submitStartMs;
  // Until the instances were quiet (see QUIET_MS): the last invocation's end, plus the deletes after it.
  const lastEndMs = Math.max(
    completedAtMs ?? 0,
    ...[...invocations.values()]
      .filter(
        (invocation) => invocation.startMs >= fromMs && (quietAtMs === undefined || invocation.startMs < quietAtMs),
      )
      .map((invocation) => invocation.endMs ?? invocation.startMs),
  );
  const toMs = (completedAtMs === undefined ? Date.now() : lastEndMs) + TAIL_MS;
  const inWindow = (atMs: number): boolean => atMs >= fromMs - (fromMs % 200) && atMs < toMs;
  const counts = [...submitCounter.take(), ...readCountFiles(countsFiles)].filter((count) => inWindow(count.atMs));
  const executions: Record<string, number> = {};
  // As Flex Consumption would place them: it scales each queue- or timer-triggered function on instances of its own.
  // Workers as the local host ran them, one billed instance per process; the wake-up function on one instance (its
  // queue holds a few messages: target-based scaling asks one instance per 16) and the timer on one (a singleton).
  const intervals = new Map<string, [number, number][]>();
  for (const invocation of invocations.values()) {
    if (invocation.startMs < fromMs || invocation.startMs >= toMs) continue;
    executions[invocation.functionName] = (executions[invocation.functionName] ?? 0) + 1;
    const key =
      invocation.functionName === "worker" ? `${invocation.instance}/worker` : `(one)/${invocation.functionName}`;
    const list = intervals.get(key) ?? [];
    list.push([invocation.startMs, invocation.endMs ?? invocation.startMs]);
    intervals.set(key, list);
  }
  // CPU in the same window: from the submission to the first sample at or after its end (the last, if none is).
  const cpuFrom = cpuSamples[0];
  const cpuTo = cpuSamples.find((sample, index) => index > 0 && sample.atMs >= toMs) ?? cpuSamples.at(-1);
  for (const report of reports) {
    const from = cpuFrom?.byInstance.get(report.name);
    const to = cpuSamples.length > 1 ? cpuTo?.byInstance.get(report.name) : undefined;
    if (from === undefined || to === undefined) continue;
    report.cpuS = Math.round((to.cpuS - from.cpuS) * 100) / 100;
    report.runQueueWaitS = Math.round((to.runQueueWaitS - from.runQueueWaitS) * 100) / 100;
  }
  for (const report of reports)
    report.termsLed = leaseAcquired.filter(
      (entry) => entry.instance === report.name && entry.atMs >= fromMs && entry.atMs < toMs,
    ).length;
  writeTimeline(join(options.outputDir, `timeline-${options.label}.json`), submitStartMs, {
    submittedMs,
    quietAtMs,
    firstDispatchMs,
    completedAtMs,
    events,
    invocations: [...invocations.values()],
  });
  const matches = aggregatesMatch(asAggregate(status?.aggregate), options.job.expected);
  if (problem === undefined && !matches)
    problem = "The job completed, but its aggregate differs from the expected one.";
  const seconds = (endMs: number | undefined): number | undefined =>
    endMs === undefined ? undefined : (endMs - submitStartMs) / 1000;
  const submitToCompletedS = seconds(completedAtMs);
  return {
    ok: problem === undefined,
    problem,
    items: options.job.items.length,
    jobId,
    submitStartMs,
    firstDispatchMs,
    completedAtMs,
    submitToFirstDispatchS: seconds(firstDispatchMs),
    submitToCompletedS,
    itemsPerS:
      submitToCompletedS === undefined || submitToCompletedS <= 0
        ? undefined
        : options.job.items.length / submitToCompletedS,
    matches,
    counts,
    executions,
    gbSeconds: billedGbSeconds([...intervals.values()]),
    gbSecondsUpper: perExecutionGbSeconds([...intervals.values()]),
    instances: reports,
    status,
    countWindow: { fromMs: fromMs - (fromMs % 200), toMs },
  };
}

/** Writes a run's timeline, every time in ms from the submission's start (`fromMs`), in time order. */
function writeTimeline(
  path: string,
  fromMs: number,
  run: {
    submittedMs: number | undefined;
    quietAtMs: number | undefined;
    firstDispatchMs: number | undefined;
    completedAtMs: number | undefined;
    events: { instance: string; type: string; atMs: number; fields: Record<string, unknown> }[];
    invocations: Invocation[];
  },
): void {
  const at = (ms: number | undefined): number | undefined => (ms === undefined ? undefined : ms - fromMs);
  const entries = [
    ...run.events.map((event) => ({
      atMs: event.atMs - fromMs,
      instance: event.instance,
      event: event.type,
      ...event.fields,
    })),
    ...run.invocations.map((invocation) => ({
      atMs: invocation.startMs - fromMs,
      instance: invocation.instance,
      invocation: invocation.functionName,
      durationMs: invocation.endMs === undefined ? undefined : invocation.endMs - invocation.startMs,
    })),
  ].sort((a, b) => a.atMs - b.atMs);
  try {
    writeFileSync(
      path,
      `${JSON.stringify({ submittedMs: at(run.submittedMs), quietAtMs: at(run.quietAtMs), firstDispatchSeenMs: at(run.firstDispatchMs), completedAtMs: at(run.completedAtMs), entries }, null, 1)}\n`,
    );
  } catch {
    // A timeline is for reading a slow round; the run's figures do not depend on it.
  }
}

/** The heap samples an instance wrote (`heapSampler.ts`), in MiB; none when it wrote none. */
function readHeapSamples(file: string | undefined): { atMs: number; heapUsedMiB: number; rssMiB: number }[] {
  if (file === undefined || !existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as { atMs: number; heapUsedBytes: number; rssBytes: number })
    .map((sample) => ({
      atMs: sample.atMs,
      heapUsedMiB: Math.round((sample.heapUsedBytes / 1048576) * 10) / 10,
      rssMiB: Math.round((sample.rssBytes / 1048576) * 10) / 10,
    }));
}

/** VmRSS or VmHWM of a process in KiB (Linux); undefined when it cannot be read. */
export function readRssKiB(pid: number, field: "VmRSS" | "VmHWM"): number | undefined {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match?.[1] === undefined ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}

/** Resets a process's VmHWM to its current RSS (Linux, `clear_refs` 5); false when it cannot. */
function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

function mib(kib: number | undefined): number | undefined {
  return kib === undefined ? undefined : Math.round((kib / 1024) * 10) / 10;
}
