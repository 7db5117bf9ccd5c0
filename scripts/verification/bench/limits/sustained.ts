import { resolve } from "node:path";
import type { CoordinatorApp } from "../../../../src/app/context";
import { getJobStatus, hasEnded, submitJob } from "../../../../src/app/jobs";
import { TaskRegistry } from "../../../../src/coordination/kinds/taskRegistry";
import type { JobLimits } from "../../../../src/coordination/jobs/submit";
import { groupByKind } from "../../../../src/groupBy/groupBy";
import { delay } from "../../../../src/library/util/delay";
import { startAzurite, type Azurite } from "../../../../dev/src/local/azurite";
import { InstanceProcess } from "../../../../dev/src/local/instances";
import { instanceEnv, waitForReady } from "../../../../dev/src/local/startup";
import { ensureAppStorage } from "../../../../dev/src/local/storageSetup";
import { startCountingProxy, type CountingProxy } from "../../../support/countingProxy";
import { REPO_APP } from "../../../support/repoApp";
import { createRepoApp } from "../../../support/repoKinds";
import { maxConcurrency, maxStartsInWindow } from "../../chaos/limits/limitMeasure";
import { round, type Measurement } from "./measurement";
import { RUN_LINE, SUSTAINED_ITEM_MS, SUSTAINED_KIND, sustainedKind, type SustainedRun } from "./sustainedKind";

/**
 * Utilisation of a sustained job under a global limit, and what the limits cost in storage requests (issue 42). Its
 * own cluster: a persistent Azurite behind the counting proxy (scripts/support/countingProxy.ts) and N instance
 * processes of this repository's app with the bench's kind (./sustainedKind.ts: each item 200 ms, its run printed to
 * stdout, no storage request of its own). Three jobs of the same items, one after another, each alone:
 * - `concurrency`: the job's limit of 8 items running at once;
 * - `rate`: the job's limit of 20 starts in any 1 s window;
 * - `unlimited`: no limit (how fast the app runs them, and the baseline of requests per item).
 * Utilisation is measured over the job's sustained phase, from its first item's start to its last item's start (the
 * ramp-up included, the drain of the last items not): mean items running at once over the concurrency limit, and
 * starts per second over the rate's. Requests per item are the app's (every instance's, the local host's own polling
 * included) through the proxy from the submission to the job's completion, over its items; the bench's own submit
 * and status reads go to Azurite directly.
 */

/** Enough that each limited job runs a minute or more: several generations of units of about 20 s each. */
const ITEMS = 2_400;
const CONCURRENCY_LIMIT = 8;
const RATE = { limit: 20, periodSeconds: 1 } as const;
const POLL_MS = 250;
const JOB_TIMEOUT_MS = 600_000;
const ENTRY = resolve(__dirname, "sustainedApp.ts");

/** One job's figures. */
export interface SustainedJob {
  name: "concurrency" | "rate" | "unlimited";
  limits: JobLimits | null;
  items: number;
  /** Item runs the instances printed (a redelivered item prints twice). */
  runs: number;
  completionS: number;
  /** From the first start to the last start, s. */
  sustainedS: number;
  startsPerS: number;
  meanConcurrency: number;
  maxConcurrency: number;
  /** The most starts in any window of the rate's period (1 s). */
  maxStartsInWindow: number;
  /** Mean concurrency over the concurrency limit, or starts per second over the rate limit; null without a limit. */
  utilisation: number | null;
  requests: number;
  requestsPerItem: number;
  /** Billed storage transactions (a batch counts each of its parts), per item. */
  transactionsPerItem: number;
}

/** The measurement's figures. */
export interface SustainedResult {
  itemMs: number;
  jobs: SustainedJob[];
  /** Requests per item of each limited job over the unlimited one's. */
  requestsRatio: { concurrency: number; rate: number };
}

const JOBS: readonly { name: SustainedJob["name"]; limits: JobLimits | undefined }[] = [
  { name: "concurrency", limits: { concurrency: CONCURRENCY_LIMIT } },
  { name: "rate", limits: { rate: RATE } },
  { name: "unlimited", limits: undefined },
];

function submission(tag: string, limits: JobLimits | undefined): Parameters<typeof submitJob>[1] {
  return {
    kind: SUSTAINED_KIND,
    params: { format: "csv", keyField: "region", valueField: "amount" },
    items: Array.from({ length: ITEMS }, (_, index) => ({ inline: `region,amount\n${tag}${index % 7},${index}` })),
    ...(limits === undefined ? {} : { limits }),
  };
}

async function runJob(
  app: CoordinatorApp,
  tag: string,
  limits: JobLimits | undefined,
  abortSignal: AbortSignal,
): Promise<{ id: string; startedMs: number; completedMs: number }> {
  const startedMs = Date.now();
  const submitted = await submitJob(app, submission(tag, limits), { abortSignal });
  if (!submitted.ok) throw new Error(`The ${tag} job was refused: ${JSON.stringify(submitted.errors)}`);
  const deadline = startedMs + JOB_TIMEOUT_MS;
  for (;;) {
    const status = await getJobStatus(app, submitted.id, { abortSignal });
    if (status !== undefined && hasEnded(status.status)) {
      if (status.status !== "completed" || status.completedAt === undefined || status.progress.failed > 0)
        throw new Error(`The ${tag} job ${submitted.id} ended ${status.status}: ${JSON.stringify(status.progress)}`);
      return { id: submitted.id, startedMs, completedMs: Date.parse(status.completedAt) };
    }
    if (Date.now() > deadline) throw new Error(`The ${tag} job did not end in ${JOB_TIMEOUT_MS} ms`);
    await delay(POLL_MS, { abortSignal });
  }
}

/** Time-weighted mean of items running at once over [fromMs, toMs]. */
function meanConcurrency(runs: readonly SustainedRun[], fromMs: number, toMs: number): number {
  if (toMs <= fromMs) return Number.NaN;
  const busyMs = runs.reduce(
    (sum, run) => sum + Math.max(0, Math.min(run.endMs, toMs) - Math.max(run.startMs, fromMs)),
    0,
  );
  return busyMs / (toMs - fromMs);
}

function figures(
  job: (typeof JOBS)[number],
  runs: readonly SustainedRun[],
  timing: { startedMs: number; completedMs: number },
  requests: ReturnType<CountingProxy["between"]>,
): SustainedJob {
  const starts = runs.map((run) => run.startMs).sort((a, b) => a - b);
  const first = starts[0] ?? timing.startedMs;
  const last = starts.at(-1) ?? first;
  const sustainedS = (last - first) / 1000;
  const startsPerS = sustainedS > 0 ? (starts.length - 1) / sustainedS : Number.NaN;
  const mean = meanConcurrency(runs, first, last);
  const transactions = requests.reduce((sum, request) => sum + request.transactions, 0);
  const utilisation =
    job.limits?.concurrency !== undefined
      ? mean / job.limits.concurrency
      : job.limits?.rate !== undefined
        ? startsPerS / (job.limits.rate.limit / job.limits.rate.periodSeconds)
        : null;
  return {
    name: job.name,
    limits: job.limits ?? null,
    items: ITEMS,
    runs: runs.length,
    completionS: round((timing.completedMs - timing.startedMs) / 1000),
    sustainedS: round(sustainedS),
    startsPerS: round(startsPerS),
    meanConcurrency: round(mean),
    maxConcurrency: maxConcurrency(
      runs.map((run) => ({ key: "", startMs: run.startMs, endMs: run.endMs })),
      timing.completedMs,
    ).max,
    maxStartsInWindow: maxStartsInWindow(
      runs.map((run) => ({ key: "", startMs: run.startMs, endMs: run.endMs })),
      RATE.periodSeconds * 1000,
    ).max,
    utilisation: utilisation === null ? null : round(utilisation),
    requests: requests.length,
    requestsPerItem: round(requests.length / ITEMS, 3),
    transactionsPerItem: round(transactions / ITEMS, 3),
  };
}

export const sustained: Measurement<SustainedResult> = {
  name: "sustained",
  needsCluster: false,
  async run({ args, abortSignal, log }) {
    let azurite: Azurite | undefined;
    let proxy: CountingProxy | undefined;
    const instances: InstanceProcess[] = [];
    const runs: SustainedRun[] = [];
    try {
      azurite = await startAzurite({ persistent: true });
      proxy = await startCountingProxy(azurite);
      const { env, settings } = instanceEnv(process.env, proxy.appConnectionString, args.schedule);
      await ensureAppStorage(azurite.connectionString, settings);
      for (let index = 1; index <= args.instances; index++)
        instances.push(
          new InstanceProcess(
            `instance-${index}`,
            { ...REPO_APP, ...env, LOCAL_APP_ENTRY: ENTRY },
            {
              onEvent: () => undefined,
              onReady: () => undefined,
              onExit: () => undefined,
              onLog: (_, line) => {
                const at = line.message.indexOf(RUN_LINE);
                if (at >= 0) runs.push(JSON.parse(line.message.slice(at + RUN_LINE.length)) as SustainedRun);
              },
            },
          ),
        );
      await waitForReady(instances, abortSignal);
      const client = createRepoApp(
        { ...env, COORDINATION_STORAGE: azurite.connectionString, WEBSITE_INSTANCE_ID: "bench-sustained" },
        { registry: new TaskRegistry([groupByKind, sustainedKind]) },
      );
      log(`  warm-up: one unlimited job (not counted)…`);
      await runJob(client, "warm", undefined, abortSignal);
      const jobs: SustainedJob[] = [];
      for (const job of JOBS) {
        const timing = await runJob(client, job.name, job.limits, abortSignal);
        const mine = runs.filter((run) => run.jobId === timing.id);
        const result = figures(job, mine, timing, proxy.between(timing.startedMs, timing.completedMs));
        jobs.push(result);
        log(
          `  ${job.name}: ${result.completionS} s, ${result.startsPerS} starts/s, mean ${result.meanConcurrency} at once (max ${result.maxConcurrency}), utilisation ${result.utilisation ?? "-"}, ${result.requestsPerItem} requests/item`,
        );
        proxy.forget(Date.now());
      }
      const base = jobs.find((job) => job.name === "unlimited")?.requestsPerItem ?? Number.NaN;
      const per = (name: SustainedJob["name"]): number =>
        round((jobs.find((job) => job.name === name)?.requestsPerItem ?? Number.NaN) / base);
      return { itemMs: SUSTAINED_ITEM_MS, jobs, requestsRatio: { concurrency: per("concurrency"), rate: per("rate") } };
    } finally {
      await Promise.all(instances.map((instance) => instance.stop(35_000)));
      await proxy?.close();
      await azurite?.stop();
    }
  },
  table(result) {
    const rows = result.jobs.map(
      (job) =>
        `| ${job.name} | ${job.limits === null ? "none" : JSON.stringify(job.limits)} | ${job.completionS} | ${job.startsPerS} | ${job.meanConcurrency} (max ${job.maxConcurrency}) | ${job.maxStartsInWindow} | ${job.utilisation ?? "–"} | ${job.requestsPerItem} | ${job.transactionsPerItem} |`,
    );
    return [
      `Sustained jobs of ${ITEMS} items of ${result.itemMs} ms, each alone (utilisation goal ≥ 0.9):`,
      "",
      "| Job | Limits | Completion s | Starts/s | Mean at once | Max starts in 1 s | Utilisation | Requests/item | Transactions/item |",
      "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
      ...rows,
      "",
      `Requests per item over the unlimited job's: concurrency-limited ${result.requestsRatio.concurrency}×, rate-limited ${result.requestsRatio.rate}×.`,
    ].join("\n");
  },
};
