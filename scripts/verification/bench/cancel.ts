import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { randomUUID } from "node:crypto";
import { type CoordinatorApp, type Sink } from "../../../src/app/context";
import { createRepoApp } from "../../support/repoKinds";
import { cancelJob, getJobStatus, handleWorkMessage, runCoordinatorTick, submitJob } from "../../../src/app/operations";
import { groupByKind } from "../../../src/groupBy/groupBy";
import { defineTaskKind } from "../../../src/coordination/kinds/taskKinds";
import { TaskRegistry } from "../../../src/coordination/kinds/taskRegistry";
import { silentLogger } from "../../../src/library/util/logger";
import { delay } from "../../../src/library/util/delay";
import { startAzurite } from "../../../dev/src/local/azurite";
import { numberFlag, parseFlags, pathFlag, UsageError } from "../../../src/cli/flags";

/**
 * `npm run bench:cancel`: how many items of a cancelled job workers still process after the cancellation request is
 * stored — with the workers' stop checks, and without them (a worker that never looks: the behaviour before issue 20),
 * side by side on one Azurite. The real leader step and the real worker code (`runCoordinatorTick`,
 * `handleWorkMessage`) run in this process over real storage: a leader loop, and `--workers` consumers that each take
 * one work unit at a time (as many busy workers as units in flight). Items take `--item-ms` each. The request comes
 * once `--cancel-at` of the job is done; the job must then end as cancelled.
 */

const USAGE = `Usage: npm run bench:cancel -- [--items N] [--workers N] [--item-ms MS] [--cancel-at FRACTION] [--rounds N] [--out FILE]
  --items      items in the job (default 20000)
  --workers    consumers taking one unit at a time (default 8)
  --item-ms    time each item takes (default 2)
  --cancel-at  fraction of the job done when the cancellation is requested (default 0.1)
  --rounds     rounds of each mode, alternating (default 2)
  --out        write the figures as JSON to FILE`;

interface RoundResult {
  mode: "checks" | "no-checks";
  /** Items whose processing started after the cancellation request was stored. */
  afterCancel: number;
  /** Work units being processed when the request was stored. */
  unitsInFlight: number;
  /** Items of the job (done + failed + skipped) and its final status. */
  status: string;
  done: number;
  skipped: number;
  /** Items of the largest unit the job was sent in. */
  unitItems: number;
}

async function main(argv: string[]): Promise<void> {
  const flags = parseFlags(argv, {
    items: { type: "string" },
    workers: { type: "string" },
    "item-ms": { type: "string" },
    "cancel-at": { type: "string" },
    rounds: { type: "string" },
    out: { type: "string" },
    help: { type: "boolean" },
  });
  if (flags.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const items = numberFlag(flags.items, "--items", { min: 100, max: 1_000_000 }) ?? 20_000;
  const workers = numberFlag(flags.workers, "--workers", { min: 1, max: 64 }) ?? 8;
  const itemMs = numberFlag(flags["item-ms"], "--item-ms", { min: 0, max: 1000 }) ?? 2;
  const cancelAt = numberFlag(flags["cancel-at"], "--cancel-at", { min: 0.01, max: 0.9, integer: false }) ?? 0.1;
  const rounds = numberFlag(flags.rounds, "--rounds", { min: 1, max: 20 }) ?? 2;
  const out = pathFlag(flags.out, "--out");
  const azurite = await startAzurite();
  const results: RoundResult[] = [];
  try {
    for (let round = 0; round < rounds; round++)
      for (const mode of ["checks", "no-checks"] as const) {
        const result = await runRound(azurite.connectionString, { mode, items, workers, itemMs, cancelAt });
        results.push(result);
        process.stdout.write(
          `${mode.padEnd(9)} round ${round + 1}: ${result.afterCancel} items processed after the request (units in flight then: ${result.unitsInFlight} × ${result.unitItems} items); job ${result.status}, done ${result.done}, skipped ${result.skipped}\n`,
        );
      }
  } finally {
    await azurite.stop();
  }
  const median = (mode: RoundResult["mode"]): number => {
    const values = results
      .filter((result) => result.mode === mode)
      .map((result) => result.afterCancel)
      .sort((a, b) => a - b);
    return values[Math.floor((values.length - 1) / 2)] ?? 0;
  };
  process.stdout.write(
    `\nItems processed after the cancellation request (median of ${rounds}): with stop checks ${median("checks")}, without ${median("no-checks")}; ${workers} busy workers, units of up to ${results[0]?.unitItems ?? 0} items.\n`,
  );
  if (out !== undefined) {
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(
      out,
      `${JSON.stringify({ items, workers, itemMs, cancelAt, rounds: results, medians: { checks: median("checks"), noChecks: median("no-checks") } }, null, 2)}\n`,
    );
  }
}

/** One job, cancelled once `cancelAt` of it is done; counts the items started after the request was stored. */
async function runRound(
  connectionString: string,
  options: { mode: RoundResult["mode"]; items: number; workers: number; itemMs: number; cancelAt: number },
): Promise<RoundResult> {
  const suffix = randomUUID().slice(0, 8);
  let requestedAtMs = Number.POSITIVE_INFINITY;
  let afterCancel = 0;
  let inFlight = 0;
  let unitsInFlightAtRequest = 0;
  let unitItems = 0;
  const sleepy = defineTaskKind({
    name: "sleepy",
    async process() {
      if (performance.now() > requestedAtMs) afterCancel++;
      await delay(options.itemMs);
    },
  });
  const app = createRepoApp(
    {
      COORDINATION_STORAGE: connectionString,
      WEBSITE_INSTANCE_ID: `bench-cancel-${suffix}`,
      LEASE_CONTAINER: `leases-${suffix}`,
      STATE_CONTAINER: `state-${suffix}`,
      SYSTEM_CONTAINER: `system-${suffix}`,
      INPUT_CONTAINER: `inputs-${suffix}`,
      WORK_QUEUE: `work-${suffix}`,
      RESULTS_QUEUE: `results-${suffix}`,
      WAKE_QUEUE: `wake-${suffix}`,
      STEP_BUDGET_MS: "3000",
    },
    { registry: new TaskRegistry([groupByKind, sleepy]) },
  );
  const worker: CoordinatorApp =
    options.mode === "checks" ? app : { ...app, jobStops: { isStopped: () => Promise.resolve(false) } };
  const sink: Sink = { logger: silentLogger, emit: () => undefined };
  const submitted = await submitJob(
    app,
    { kind: "sleepy", items: Array.from({ length: options.items }, (_, i) => ({ inline: String(i) })) },
    { wake: false },
  );
  if (!submitted.ok) throw new Error(JSON.stringify(submitted.errors));
  const { id } = submitted;
  const stop = new AbortController();
  const leader = (async () => {
    while (!stop.signal.aborted) {
      await runCoordinatorTick(app, sink).catch(() => undefined);
      await delay(50, { abortSignal: stop.signal }).catch(() => undefined);
    }
  })();
  const consumers = Array.from({ length: options.workers }, async () => {
    while (!stop.signal.aborted) {
      const [message] = await app.workQueue.receive(1, 120);
      if (message === undefined) {
        await delay(20, { abortSignal: stop.signal }).catch(() => undefined);
        continue;
      }
      const payload = JSON.parse(message.text ?? "null") as { inputs?: unknown[] };
      unitItems = Math.max(unitItems, payload.inputs?.length ?? 1);
      inFlight++;
      try {
        await handleWorkMessage(worker, sink, payload, { id: message.id, dequeueCount: message.dequeueCount });
      } finally {
        inFlight--;
      }
      await app.workQueue.delete(message);
    }
  });
  try {
    for (;;) {
      const status = await getJobStatus(app, id);
      const progress = status?.progress;
      if (progress !== undefined && progress.done >= options.items * options.cancelAt) break;
      await delay(20);
    }
    const cancelled = await cancelJob(app, id, { wake: false });
    requestedAtMs = performance.now();
    unitsInFlightAtRequest = inFlight;
    if (cancelled.outcome !== "requested") throw new Error(`cancel answered ${cancelled.outcome}`);
    for (;;) {
      const status = await getJobStatus(app, id);
      if (status?.status === "cancelled" && (await app.workQueue.approximateCount()) === 0 && inFlight === 0) {
        return {
          mode: options.mode,
          afterCancel,
          unitsInFlight: unitsInFlightAtRequest,
          status: status.status,
          done: status.progress.done,
          skipped: status.progress.skipped,
          unitItems,
        };
      }
      await delay(50);
    }
  } finally {
    stop.abort();
    await Promise.allSettled([leader, ...consumers]);
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    process.stderr.write(`${error.message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
