import { keys } from "./jobState.js";
import type { BlobFiles, InputFiles } from "../ports/ports.js";
import type { Abortable } from "../../library/util/delay.js";

/**
 * Whether workers should stop processing a job's items: a blob `jobs/<id>/stop` in the system container, written by a
 * cancellation request (after the request the leader applies, so a job whose items stop is always one the leader
 * ends) and by the leader when it ends a job early (cancelled, expired, failed). It never goes away while the job's
 * blobs exist, so a stopped job stays stopped. A small empty blob: one read (404 when absent) answers.
 */

/** Writes a job's stop blob (idempotent). */
export async function writeJobStop(system: Pick<BlobFiles, "writeText">, jobId: string, options: Abortable = {}) {
  await system.writeText(keys.stop(jobId), "", options);
}

/** Most jobs one process remembers; the least recently asked about is forgotten first. */
const MAX_REMEMBERED_JOBS = 1000;

/**
 * The stop checks of one process: concurrent checks of one job share one read, a stopped job is remembered as stopped,
 * and a running one for as long as the caller allows (`maxAgeMs`). A check whose read fails answers "not stopped":
 * the check saves work, it never decides what is counted (the leader discards a stopped job's results anyway).
 */
export class JobStopChecks {
  private readonly jobs = new Map<string, { stopped: boolean; atMs: number; reading?: Promise<boolean> }>();

  constructor(
    private readonly system: Pick<InputFiles, "readText">,
    private readonly monotonicMs: () => number = () => performance.now(),
  ) {}

  /**
   * Whether the job's stop blob exists, as read at most `maxAgeMs` ago (0: a read that starts now, or one already in
   * flight).
   */
  async isStopped(jobId: string, options: { maxAgeMs: number }): Promise<boolean> {
    const known = this.jobs.get(jobId);
    if (known !== undefined) {
      // Most recently used last: re-inserting moves it to the end.
      this.jobs.delete(jobId);
      this.jobs.set(jobId, known);
      if (known.stopped) return true;
      if (known.reading !== undefined) return known.reading;
      if (this.monotonicMs() - known.atMs <= options.maxAgeMs) return false;
    }
    const entry = known ?? { stopped: false, atMs: Number.NEGATIVE_INFINITY };
    // Not under the caller's signal: other callers share this read.
    const reading = this.read(jobId).then((stopped) => {
      entry.stopped ||= stopped;
      entry.atMs = this.monotonicMs();
      entry.reading = undefined;
      return entry.stopped;
    });
    entry.reading = reading;
    this.jobs.set(jobId, entry);
    for (const oldest of this.jobs.keys()) {
      if (this.jobs.size <= MAX_REMEMBERED_JOBS) break;
      this.jobs.delete(oldest);
    }
    return reading;
  }

  private async read(jobId: string): Promise<boolean> {
    try {
      return (await this.system.readText(keys.stop(jobId))) !== undefined;
    } catch {
      return false;
    }
  }
}
