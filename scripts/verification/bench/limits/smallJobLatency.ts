import { BlobServiceClient } from "@azure/storage-blob";
import type { CoordinatorApp } from "../../../../src/app/context";
import { cancelJob, getJobStatus, hasEnded, submitJob } from "../../../../src/app/jobs";
import type { JobStatus } from "../../../../src/coordination/state/jobStatus";
import { delay } from "../../../../src/library/util/delay";
import { round, stats, type Measurement, type Stats } from "./measurement";

/**
 * (a) How soon after its submission a small job completes while a large job of equal priority runs, against the same
 * small job on the idle coordinator (issue 42). The idle samples first, then the large job (its items in a manifest)
 * and, once its workers are busy, the busy samples one after another, each counted only if the large job was still
 * running when it completed; then the large job is cancelled. A sample is the time from the start of `submitJob`
 * (which wakes the coordinator, as HTTP and the CLI do) to the small job's `completedAt` (the leader's clock: the same
 * machine), polled every 50 ms.
 */

const PARAMS = { format: "csv", keyField: "region", valueField: "amount" } as const;
const POLL_MS = 50;
const SMALL_TIMEOUT_MS = 300_000;

/** One small job timed. */
export interface SmallSample {
  latencyS: number;
  /** The large job's items done when the small one was submitted, and when it completed (busy samples). */
  bigDoneAtSubmit?: number;
  bigDoneAtEnd?: number;
}

/** The measurement's figures. */
export interface SmallJobResult {
  bigItems: number;
  smallItems: number;
  idle: { samples: SmallSample[]; latencyS: Stats };
  busy: { samples: SmallSample[]; latencyS: Stats };
  /** Busy median over idle median. */
  ratio: number;
  bigJob: { id: string; status: string; done: number; total: number; runningS: number };
}

const small = (count: number, tag: string) => ({
  kind: "group-by",
  params: PARAMS,
  items: Array.from({ length: count }, (_, index) => ({ inline: `region,amount\n${tag},${index}` })),
});

async function waitFor(
  app: CoordinatorApp,
  id: string,
  until: (status: JobStatus) => boolean,
  timeoutMs: number,
  abortSignal: AbortSignal,
): Promise<JobStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await getJobStatus(app, id, { abortSignal });
    if (status !== undefined && until(status)) return status;
    if (Date.now() > deadline)
      throw new Error(`Job ${id} did not get there in ${timeoutMs} ms: ${JSON.stringify(status?.progress)}`);
    await delay(POLL_MS, { abortSignal });
  }
}

/** Submits a small job and waits for it: seconds from the submission's start to its completion. */
async function timeSmallJob(
  app: CoordinatorApp,
  items: number,
  tag: string,
  abortSignal: AbortSignal,
): Promise<number> {
  const startedMs = Date.now();
  const submitted = await submitJob(app, small(items, tag), { abortSignal });
  if (!submitted.ok) throw new Error(`The small job was refused: ${JSON.stringify(submitted.errors)}`);
  const done = await waitFor(app, submitted.id, (status) => hasEnded(status.status), SMALL_TIMEOUT_MS, abortSignal);
  if (done.status !== "completed" || done.completedAt === undefined)
    throw new Error(`The small job ${submitted.id} ended ${done.status}`);
  return (Date.parse(done.completedAt) - startedMs) / 1000;
}

/** Uploads the large job's items as an NDJSON manifest in the input container. */
async function uploadManifest(app: CoordinatorApp, connectionString: string, items: number): Promise<string> {
  const name = `bench/limits-big-${items}.ndjson`;
  const lines = Array.from({ length: items }, (_, index) =>
    JSON.stringify({ inline: `region,amount\nr${index % 97},${index % 1000}` }),
  );
  const text = `${lines.join("\n")}\n`;
  const container = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(
    app.settings.INPUT_CONTAINER,
  );
  await container.createIfNotExists();
  await container.getBlockBlobClient(name).upload(text, Buffer.byteLength(text));
  return name;
}

export const smallJobLatency: Measurement<SmallJobResult> = {
  name: "small-job",
  needsCluster: true,
  async run({ args, cluster: start, abortSignal, log }) {
    const cluster = await start();
    const app = cluster.client("bench-limits-small-job");
    const manifest = await uploadManifest(app, cluster.azurite.connectionString, args.bigItems);
    log(`  warm-up: one small job (not counted)…`);
    await timeSmallJob(app, args.smallItems, "warm", abortSignal);
    const idle: SmallSample[] = [];
    for (let sample = 1; sample <= args.samples; sample++) {
      idle.push({ latencyS: await timeSmallJob(app, args.smallItems, `idle${sample}`, abortSignal) });
      log(`  idle ${sample}/${args.samples}: ${idle.at(-1)?.latencyS.toFixed(2)} s`);
    }
    const bigStartMs = Date.now();
    const big = await submitJob(app, { kind: "group-by", params: PARAMS, manifest }, { abortSignal });
    if (!big.ok) throw new Error(`The large job was refused: ${JSON.stringify(big.errors)}`);
    log(`  large job ${big.id}: ${args.bigItems} items, waiting until its workers are busy…`);
    await waitFor(app, big.id, (status) => status.progress.done > 0, 300_000, abortSignal);
    const busy: SmallSample[] = [];
    for (let sample = 1; sample <= args.samples; sample++) {
      const before = await getJobStatus(app, big.id, { abortSignal });
      if (before?.status !== "running") break;
      const latencyS = await timeSmallJob(app, args.smallItems, `busy${sample}`, abortSignal);
      const after = await getJobStatus(app, big.id, { abortSignal });
      if (after?.status !== "running") {
        log(`  busy ${sample}: the large job ended first; not counted`);
        break;
      }
      busy.push({ latencyS, bigDoneAtSubmit: before.progress.done, bigDoneAtEnd: after.progress.done });
      log(
        `  busy ${sample}/${args.samples}: ${latencyS.toFixed(2)} s (large job ${after.progress.done}/${after.progress.total} done)`,
      );
    }
    const last = await getJobStatus(app, big.id, { abortSignal });
    if (last?.status === "running") await cancelJob(app, big.id, { abortSignal });
    const ended = await waitFor(app, big.id, (status) => status.status !== "running", 300_000, abortSignal);
    const idleStats = stats(idle.map((sample) => sample.latencyS));
    const busyStats = stats(busy.map((sample) => sample.latencyS));
    return {
      bigItems: args.bigItems,
      smallItems: args.smallItems,
      idle: { samples: idle, latencyS: idleStats },
      busy: { samples: busy, latencyS: busyStats },
      ratio: round(busyStats.median / idleStats.median, 2),
      bigJob: {
        id: big.id,
        status: ended.status,
        done: ended.progress.done,
        total: ended.progress.total,
        runningS: round((Date.now() - bigStartMs) / 1000, 1),
      },
    };
  },
  table(result) {
    const row = (label: string, s: Stats): string =>
      `| ${label} | ${s.n} | ${s.median.toFixed(2)} | ${s.min.toFixed(2)} | ${s.max.toFixed(2)} |`;
    return [
      `Small job (${result.smallItems} items) from submission to completion, s:`,
      "",
      "| Coordinator | Samples | Median | Min | Max |",
      "| --- | ---: | ---: | ---: | ---: |",
      row("idle", result.idle.latencyS),
      row(`beside a ${result.bigItems}-item job of equal priority`, result.busy.latencyS),
      "",
      `Busy / idle (medians): ${result.ratio}. The large job: ${result.bigJob.done}/${result.bigJob.total} done when it was ${result.bigJob.status} after ${result.bigJob.runningS} s.`,
    ].join("\n");
  },
};
