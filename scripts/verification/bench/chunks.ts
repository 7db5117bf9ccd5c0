import { mkdirSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { dirname } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { ChunkCache } from "../../../src/coordination/dispatch/chunkCache";
import { dispatchJob } from "../../../src/coordination/dispatch/dispatch";
import { JobStore } from "../../../src/coordination/state/jobStore";
import { redispatchInFlight } from "../../../src/coordination/dispatch/redispatch";
import { registerJobs } from "../../../src/coordination/jobs/registerJobs";
import { storeSubmission } from "../../../src/coordination/jobs/submit";
import { keys } from "../../../src/coordination/state/jobState";
import { MAX_INLINE_ITEM_BYTES } from "../../../src/coordination/ports/messages";
import { FencedStateStore } from "../../../src/library/fencing/FencedStateStore";
import { world } from "../../../test/support/coordinationWorld";
import { fakeTerm } from "../../../test/support/memoryPorts";
import { numberFlag, parseFlags, pathFlag, UsageError } from "../../../src/cli/flags";

/**
 * `npm run bench:chunks`: the chunk text the leader holds (its chunk cache's own accounting) and its heap, while it
 * dispatches and then re-sends a job submitted through the client API whose first chunk is small and whose next chunks
 * are large (issue 37.2): 1,000 short items, then chunks of 1,000 items of up to 40 KiB each. In one process on the
 * in-memory ports (storage holds the job's text; what is measured is what the leader holds besides it), each read
 * taking as long as a storage read of its size would, so reads started ahead land while a chunk is packed.
 */

const USAGE = `Usage: npm run bench:chunks -- [--large-chunks 8] [--item-kib 40] [--out FILE]

Dispatches, then re-sends, a job whose first chunk is small and whose next ones are large, and reports the most chunk
text the leader held (its cache's accounting) and its heap's growth.

Options:
  --large-chunks N  large chunks after the small one (default 8, the most read ahead before issue 37)
  --item-kib N      size of each item of the large chunks, KiB (default 40, the most an inline item may be)
  --out FILE        where to write the JSON report (default bench-results/chunks.json)`;

const MIB = 1024 * 1024;

function parse(argv: string[]): { largeChunks: number; itemKib: number; out: string } | undefined {
  const values = parseFlags(argv, {
    "large-chunks": { type: "string" },
    "item-kib": { type: "string" },
    out: { type: "string" },
    help: { type: "boolean", short: "h" },
  });
  if (values.help === true) return undefined;
  return {
    largeChunks: numberFlag(values["large-chunks"], "--large-chunks", { min: 1, max: 16 }) ?? 8,
    itemKib: numberFlag(values["item-kib"], "--item-kib", { min: 2, max: MAX_INLINE_ITEM_BYTES / 1024 }) ?? 40,
    out: pathFlag(values.out, "--out") ?? "bench-results/chunks.json",
  };
}

/** The heap now, after a collection when the process was started with --expose-gc. */
function heapUsed(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

async function run(largeChunks: number, itemKib: number, recordedSizes: boolean) {
  const w = world({ workUnitMaxItems: 1000, dispatchBatchSize: 10_000, maxInFlight: 20_000, workUnitSpread: 16 });
  const pad = itemKib * 1024 - 64;
  const items = Array.from({ length: 1000 * (1 + largeChunks) }, (_, i) => ({
    inline: JSON.stringify({ k: `k${i % 3}`, v: i, pad: i < 1000 ? "" : "x".repeat(pad) }),
  }));
  const { id } = await storeSubmission(w.deps.system, { kind: "group-by", params: { format: "ndjson" }, items });
  items.length = 0;
  if (!recordedSizes) {
    // As a job submitted before sizes were recorded.
    const spec = JSON.parse((await w.system.readText(keys.spec(id))) ?? "{}") as Record<string, unknown>;
    delete spec.chunkChars;
    await w.system.writeText(keys.spec(id), JSON.stringify(spec));
  }
  const jobs = new JobStore(new FencedStateStore(w.deps.state, fakeTerm(1)));
  await registerJobs(w.deps, jobs, 1, {});
  const job = await jobs.readJob(id);
  if (job === undefined) throw new Error("the job did not register");
  // The live heap's growth over the baseline, sampled (after a collection) as each chunk read ends and every 8 sends.
  const base = heapUsed();
  let peakHeap = 0;
  let messages = 0;
  let sends = 0;
  const sample = (): void => {
    peakHeap = Math.max(peakHeap, heapUsed() - base);
  };
  const read = w.system.readText.bind(w.system);
  w.system.readText = async (name: string) => {
    const text = await read(name);
    // A storage read's time: 20 ms, and 10 ms a MB (about 100 MB/s from one blob); reads run side by side.
    await delay(20 + (text?.length ?? 0) / 100_000);
    sample();
    return text;
  };
  // Work messages are counted, not kept (the queue is not the leader's memory); a group's sends take 10 ms.
  w.work.send = async (texts) => {
    if (++sends % 8 === 0) sample();
    messages += texts.length;
    await delay(10);
  };
  const startedMs = performance.now();
  const dispatchCache = new ChunkCache();
  const dispatched = await dispatchJob(w.deps, jobs, job, 10_000, { chunks: dispatchCache });
  const dispatchMs = performance.now() - startedMs;
  const sent = await jobs.readJob(id);
  if (sent === undefined) throw new Error("the job is gone");
  const resendCache = new ChunkCache();
  const resendStartedMs = performance.now();
  const resent = await redispatchInFlight(w.deps, sent.value, { chunks: resendCache });
  return {
    recordedSizes,
    itemsSent: dispatched.sent,
    itemsResent: resent.items,
    messages,
    dispatchPeakHeldMiB: dispatchCache.peakHeldBytes / MIB,
    resendPeakHeldMiB: resendCache.peakHeldBytes / MIB,
    peakHeapGrowthMiB: peakHeap / MIB,
    dispatchMs: Math.round(dispatchMs),
    resendMs: Math.round(performance.now() - resendStartedMs),
  };
}

async function main(): Promise<void> {
  const args = parse(process.argv.slice(2));
  if (args === undefined) {
    console.log(USAGE);
    return;
  }
  const rows = [];
  for (const recorded of [true, false]) rows.push(await run(args.largeChunks, args.itemKib, recorded));
  const round = (n: number): number => Math.round(n * 10) / 10;
  console.log(
    `A job of 1 small chunk and ${args.largeChunks} chunks of 1,000 items of ${args.itemKib} KiB (chunk text in MiB):`,
  );
  for (const row of rows)
    console.log(
      `  sizes ${row.recordedSizes ? "recorded" : "not recorded"}: dispatch held at most ${round(row.dispatchPeakHeldMiB)}, re-send ${round(row.resendPeakHeldMiB)}; heap growth at most ${round(row.peakHeapGrowthMiB)}; dispatch ${row.dispatchMs} ms, re-send ${row.resendMs} ms (${row.itemsSent} sent, ${row.itemsResent} re-sent)`,
    );
  const report = {
    at: new Date().toISOString(),
    machine: { cpus: availableParallelism(), loadAverage1m: round(loadavg()[0] ?? 0) },
    largeChunks: args.largeChunks,
    itemKib: args.itemKib,
    rows,
  };
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`Wrote ${args.out}`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  if (error instanceof UsageError) console.error(`\n${USAGE}`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
});
