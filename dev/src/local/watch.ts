import { delay, hasEnded, type JobStatus } from "azure-leader-coordinator/internal";
import type { InstanceProcess } from "./instances.js";
import type { MidJobLeaderKill } from "./leaderKill.js";
import type { LiveView } from "./liveView.js";
import type { RunLocalOptions } from "./options.js";

/**
 * The watching phase of a local run: redraw the live view ~2×/s, read the job's status every second (and tell the
 * `--kill-leader-after` killer), and decide when to stop — at `--duration`, or a few seconds after the
 * job ended, or at the give-up deadline, or when every instance is gone, or on abort. Without a job it runs until the
 * duration ends, every instance is gone, or the run is stopped, and shows the job the app registered last (one
 * submitted with `enqueue`, say), read the same way.
 */

/** What {@link watchRun} needs. */
export interface WatchInput {
  /** The job and how to read its status (through the app's HTTP routes); undefined without a job. */
  job?: { id: string; read: () => Promise<JobStatus | undefined> };
  instances: readonly InstanceProcess[];
  view: LiveView;
  /** When the instances were started: durations count from here. */
  startedMs: number;
  /** `--kill-leader-after`: told of each status read. */
  killer?: MidJobLeaderKill;
  /** Without a job of the run's own: the id of the job the app registered last (its events say), if any. */
  latestJobId?: () => string | undefined;
  /** Reads a job's status (through the app's HTTP routes), for {@link WatchInput.latestJobId}'s job. */
  readJob?: (id: string) => Promise<JobStatus | undefined>;
  options: RunLocalOptions;
}

const FRAME_MS = 500;
const STATUS_EVERY_MS = 1000;

/** Watches until it is time to stop; returns the last status read and, if the run went wrong, why. */
export async function watchRun(input: WatchInput): Promise<{ status: JobStatus | undefined; problem?: string }> {
  const { job, instances, view, startedMs, options } = input;
  const durationMs = options.durationS === undefined ? undefined : options.durationS * 1000;
  const deadlineMs =
    startedMs + (durationMs ?? (job === undefined ? Number.POSITIVE_INFINITY : (options.maxWaitS ?? 300) * 1000));
  let status: JobStatus | undefined;
  let lastStatusMs = -Infinity;
  let completedAtMs: number | undefined;
  for (;;) {
    const now = Date.now();
    if (options.abortSignal?.aborted === true) return { status };
    if (job === undefined && now - lastStatusMs >= STATUS_EVERY_MS) {
      lastStatusMs = now;
      status = await followedStatus(input, status);
    }
    if (job !== undefined && now - lastStatusMs >= STATUS_EVERY_MS) {
      lastStatusMs = now;
      status = (await job.read().catch(() => undefined)) ?? status;
      input.killer?.onStatus(status);
      if (status?.status === "failed")
        return { status, problem: `The job failed: ${status.failureReason ?? "no reason recorded"}.` };
      // Completed, or ended early (cancelled, expired): either way the job is over.
      if (status !== undefined && hasEnded(status.status) && completedAtMs === undefined) {
        completedAtMs = now;
        view.note(now - startedMs, `job ${job.id} ${status.status}`);
      }
    }
    if (durationMs === undefined && completedAtMs !== undefined && now - completedAtMs >= (options.settleS ?? 5) * 1000)
      return { status };
    if (now >= deadlineMs) {
      const seconds = Math.round((deadlineMs - startedMs) / 1000);
      return completedAtMs !== undefined || durationMs !== undefined || job === undefined
        ? { status }
        : { status, problem: `The job did not complete within ${seconds} s; give it longer with --duration.` };
    }
    if (instances.every((instance) => !instance.alive))
      return { status, problem: "Every instance exited; see the logs folder for why." };
    view.render({ elapsedMs: now - startedMs, instances: instances.map((instance) => instance.state), job: status });
    try {
      await delay(FRAME_MS, { abortSignal: options.abortSignal });
    } catch {
      return { status };
    }
  }
}

/** The status of the job the app registered last, for the view only (the run does not wait for it). */
async function followedStatus(input: WatchInput, last: JobStatus | undefined): Promise<JobStatus | undefined> {
  const id = input.latestJobId?.();
  if (id === undefined || input.readJob === undefined) return last;
  const read = await input.readJob(id).catch(() => undefined);
  return read ?? (last?.id === id ? last : undefined);
}
