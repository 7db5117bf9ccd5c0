import { setTimeout as sleep } from "node:timers/promises";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { defineTaskKind, type TaskKind, type TaskLimits } from "../../src/coordination/kinds/taskKinds";
import type { CoordinationDeps } from "../../src/coordination/deps";
import { storeSubmission } from "../../src/coordination/jobs/submit";
import type { JobLimits } from "../../src/coordination/jobs/submit";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { processWorkMessage } from "../../src/coordination/worker/worker";
import { readJob, world } from "./coordinationWorld";
import { fakeTerm } from "./memoryPorts";

/** One item's run as the recording kind saw it: its key and when it started and ended (monotonic ms). */
export interface ItemRun {
  item: number;
  key: string;
  startMs: number;
  endMs: number;
}

/** What {@link runLimitedJob} takes: the kind's limits, the job's items (`"<key>:<anything>"`) and how it runs. */
export interface LimitedRun {
  limits?: TaskLimits;
  jobLimits?: JobLimits;
  items: string[];
  /** How long each item takes, in ms. @default 20 */
  itemMs?: number | ((item: number) => number);
  /** Items of one unit a worker runs at once (the kind's `concurrency`). @default 4 */
  perUnit?: number;
  /** Worker loops (instances), each running up to `batch` units at once. @default 3 × 4 */
  instances?: number;
  batch?: number;
  deps?: Partial<CoordinationDeps>;
}

/**
 * Runs one job of a recording kind to its end on in-memory ports, with a leader stepping and several worker loops
 * running units at once, on real time: what limits hold when units of several workers overlap. Returns every item's
 * run, and the job's end.
 */
export async function runLimitedJob(run: LimitedRun) {
  const runs: ItemRun[] = [];
  const itemMs = run.itemMs ?? 20;
  const kind = defineTaskKind({
    name: "recorded",
    concurrency: run.perUnit ?? 4,
    ...(run.limits === undefined ? {} : { limits: run.limits }),
    async process(input, { index, abortSignal }) {
      const startMs = performance.now();
      await sleep(typeof itemMs === "number" ? itemMs : itemMs(index), undefined, { signal: abortSignal });
      runs.push({ item: index, key: input.text.split(":")[0] ?? "", startMs, endMs: performance.now() });
    },
  });
  const ended = await runJobToEnd({
    kind,
    params: null,
    items: run.items.map((inline) => ({ inline })),
    ...(run.jobLimits === undefined ? {} : { limits: run.jobLimits }),
    ...(run.instances === undefined ? {} : { instances: run.instances }),
    ...(run.batch === undefined ? {} : { batch: run.batch }),
    ...(run.deps === undefined ? {} : { deps: run.deps }),
  });
  return { runs, ...ended };
}

/** What {@link runJobToEnd} takes: any kind and a job of it. */
export interface JobRun {
  kind: TaskKind;
  params: unknown;
  items: { inline: string }[];
  limits?: JobLimits;
  /** Worker loops (instances), each running up to `batch` units at once. @default 3 × 4 */
  instances?: number;
  batch?: number;
  deps?: Partial<CoordinationDeps>;
}

/**
 * Runs one job of `kind` to its end on in-memory ports: a leader stepping and several worker loops running units at
 * once, on real time. Returns the job's end and the world it ran in.
 */
export async function runJobToEnd(run: JobRun) {
  const w = world({
    registry: new TaskRegistry([run.kind]),
    now: () => Date.now(),
    dispatchBatchSize: 1000,
    maxInFlight: 1000,
    workUnitMaxItems: 1000,
    ...run.deps,
  });
  const { id } = await storeSubmission(w.deps.system, {
    kind: run.kind.name,
    params: run.params,
    items: run.items,
    ...(run.limits === undefined ? {} : { limits: run.limits }),
  });
  const done = new AbortController();
  const workers = Array.from({ length: run.instances ?? 3 }, () => workerLoop(w.deps, run.batch ?? 4, done.signal));
  const term = fakeTerm(1);
  let job = await readJob(w.state, id);
  const started = Date.now();
  while ((job === undefined || job.status === "running") && Date.now() - started < 60_000) {
    await runCoordinationStep(w.deps, term, { budgetMs: 200 });
    job = await readJob(w.state, id);
    if (job?.status === "running") await sleep(5);
  }
  done.abort();
  await Promise.all(workers);
  return { job, world: w };
}

/** A worker instance: receives up to `batch` units and runs them at once, again and again, until `signal`. */
async function workerLoop(deps: CoordinationDeps, batch: number, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    const messages = await deps.workQueue.receive(batch, 600);
    if (messages.length === 0) {
      await sleep(5);
      continue;
    }
    await Promise.all(
      messages.map(async (message) => {
        try {
          await processWorkMessage(deps, JSON.parse(message.text ?? "null") as unknown, {
            id: message.id,
            dequeueCount: message.dequeueCount,
            maxDequeueCount: 5,
          });
        } catch {
          // As the host does after a failed delivery: the message is delivered again (its count one higher).
          await deps.workQueue.release(message);
          return;
        }
        await deps.workQueue.delete(message);
      }),
    );
  }
}

/** The most runs (of those `match` keeps) at once. */
export function peakConcurrency(runs: readonly ItemRun[], match: (run: ItemRun) => boolean = () => true): number {
  const edges = runs
    .filter(match)
    .flatMap((run) => [
      { at: run.startMs, delta: 1 },
      { at: run.endMs, delta: -1 },
    ])
    .sort((a, b) => a.at - b.at || a.delta - b.delta);
  let running = 0;
  let peak = 0;
  for (const edge of edges) {
    running += edge.delta;
    peak = Math.max(peak, running);
  }
  return peak;
}

/** The most starts (of those `match` keeps) in any window of `windowMs` — every window, not only aligned ones. */
export function peakStarts(
  runs: readonly ItemRun[],
  windowMs: number,
  match: (run: ItemRun) => boolean = () => true,
): number {
  const starts = runs
    .filter(match)
    .map((run) => run.startMs)
    .sort((a, b) => a - b);
  let peak = 0;
  let from = 0;
  for (let to = 0; to < starts.length; to++) {
    while ((starts[to] ?? 0) - (starts[from] ?? 0) >= windowMs) from++;
    peak = Math.max(peak, to - from + 1);
  }
  return peak;
}
