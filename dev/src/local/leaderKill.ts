import { hasEnded, type JobStatus } from "azure-leader-coordinator/internal";
import type { InstanceProcess } from "./instances.js";
import type { EventLine } from "./protocol.js";

/**
 * `--kill-leader-after S`: SIGKILL a leader while the job runs. A leader holds its term only while it runs a step,
 * which may last milliseconds, so the kill is not a poll of who leads: from S seconds on, once the job has items done
 * and is not over, it kills the instance that holds a term at that moment — or, if none does, the next one whose
 * `lease-acquired` event arrives, in the event handler itself. So it lands mid-job every time the job outlasts S.
 */
export class MidJobLeaderKill {
  private jobId: string | undefined;
  private progressed = false;
  private ended = false;
  private lastProgress = "its first items done";
  private outcome: { instance: string; epoch: number | undefined; progress: string } | undefined;

  constructor(
    private readonly instances: readonly InstanceProcess[],
    private readonly notBeforeMs: number,
    private readonly note: (text: string) => void,
  ) {}

  /** What happened: who was killed with the job how far, or why nobody was. */
  get result(): string {
    if (this.outcome !== undefined)
      return `killed ${this.outcome.instance}, the leader (epoch ${this.outcome.epoch ?? "?"}), with the job at ${this.outcome.progress}`;
    return this.ended ? "no leader was killed: the job ended first (give it more items)" : "no leader was killed";
  }

  /** Whether a leader was killed. */
  get killed(): boolean {
    return this.outcome !== undefined;
  }

  /** The job to kill during. */
  watch(jobId: string): void {
    this.jobId = jobId;
  }

  /** The job's latest status (read about once a second): arms the kill once items are done, and kills a leader now. */
  onStatus(status: JobStatus | undefined): void {
    if (status === undefined || this.outcome !== undefined) return;
    const { done, failed, total } = status.progress;
    if (hasEnded(status.status)) this.ended = true;
    if (done + failed > 0 && !this.ended) this.progressed = true;
    this.lastProgress = `${done + failed}/${total} items`;
    if (!this.armed()) return;
    const leader = this.instances.find((instance) => instance.alive && instance.state.role === "leader");
    if (leader !== undefined) this.kill(leader, this.lastProgress);
  }

  /** Every event of every instance: a job that ended disarms; a new leader while armed is killed at once. */
  onEvent(line: EventLine, from: InstanceProcess): void {
    if (this.jobId === undefined || this.outcome !== undefined) return;
    if (
      "jobId" in line &&
      line.jobId === this.jobId &&
      ["job-completed", "job-failed", "job-cancelled", "job-expired"].includes(line.type)
    )
      this.ended = true;
    if (line.type === "lease-acquired" && this.armed() && from.alive) this.kill(from, this.lastProgress);
  }

  private armed(): boolean {
    return this.progressed && !this.ended && this.outcome === undefined && Date.now() >= this.notBeforeMs;
  }

  private kill(instance: InstanceProcess, progress: string): void {
    this.outcome = { instance: instance.state.name, epoch: instance.state.epoch, progress };
    this.note(`SIGKILL ${instance.state.name} (pid ${instance.state.pid ?? "?"}), the leader, mid-job (${progress})`);
    instance.kill();
  }
}
