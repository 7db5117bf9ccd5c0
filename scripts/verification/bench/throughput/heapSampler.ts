import { appendFileSync } from "node:fs";

/**
 * Preloaded into a benchmark's instance process with `--expose-gc` (`node --import`, through its
 * `languageWorkers__node__arguments`, see `projectRun.ts`) when `LOCAL_HEAP_SAMPLES_FILE` is set: on each SIGUSR2 it
 * runs a full garbage collection and appends the live heap left (`heapUsed`) and the RSS to that file, one JSON line.
 * The live heap after a full collection is what a leak grows; RSS also holds garbage V8 has not collected yet, and
 * memory it keeps for later (issue 35).
 */
const samplesFile = process.env.LOCAL_HEAP_SAMPLES_FILE;
const gc = (globalThis as { gc?: () => void }).gc;
if (samplesFile !== undefined && samplesFile !== "" && gc !== undefined)
  process.on("SIGUSR2", () => {
    gc();
    const { heapUsed, rss } = process.memoryUsage();
    appendFileSync(samplesFile, `${JSON.stringify({ atMs: Date.now(), heapUsedBytes: heapUsed, rssBytes: rss })}\n`);
  });
