import { clearScreenDown, moveCursor } from "node:readline";
import type { InstanceState } from "./instances.js";

/**
 * What a person watching a local run sees. On a TTY a small table is redrawn in place (~2×/s): per instance its pid,
 * role, epoch and last step, then the job's progress bar and the latest notable events. Elsewhere (CI, a pipe) it
 * prints notable events as they happen and a one-line summary every few seconds, never cursor movement.
 */

/** Job progress as the app reports it. */
export interface JobProgress {
  id: string;
  status: string;
  progress: { total: number; dispatched: number; done: number; failed: number };
}

/** Everything one frame shows. */
export interface LiveSnapshot {
  elapsedMs: number;
  instances: readonly InstanceState[];
  job: JobProgress | undefined;
}

/** How to show the run: redraw in place, plain lines, or nothing. */
export type LiveMode = "tty" | "plain" | "off";

const PLAIN_SUMMARY_EVERY_MS = 5_000;
const NOTES_KEPT = 6;

/** The live view of one run. */
export class LiveView {
  private readonly notes: string[] = [];
  private drawnLines = 0;
  private lastPlainSummaryMs = -Infinity;

  constructor(
    private readonly out: NodeJS.WritableStream,
    readonly mode: LiveMode,
    private readonly header: string,
  ) {
    if (mode === "plain") this.write(`${header}\n`);
  }

  /** Records a notable event ("instance-2 acquired the lease, epoch 3"); printed at once when not a TTY. */
  note(elapsedMs: number, text: string): void {
    const line = `+${(elapsedMs / 1000).toFixed(1)}s ${text}`;
    this.notes.push(line);
    if (this.notes.length > NOTES_KEPT) this.notes.shift();
    if (this.mode === "plain") this.write(`${line}\n`);
  }

  /** Shows a frame (TTY) or, every few seconds, a summary line (plain). */
  render(snapshot: LiveSnapshot): void {
    if (this.mode === "tty") {
      this.clear();
      const lines = [
        this.header,
        ...instanceTable(snapshot),
        jobLine(snapshot.job),
        ...this.notes.map((note) => `  ${note}`),
      ];
      this.write(`${lines.join("\n")}\n`);
      this.drawnLines = lines.length;
    } else if (this.mode === "plain" && snapshot.elapsedMs - this.lastPlainSummaryMs >= PLAIN_SUMMARY_EVERY_MS) {
      this.lastPlainSummaryMs = snapshot.elapsedMs;
      const roles = snapshot.instances
        .map(
          (instance) => `${instance.name}=${instance.role}${instance.epoch === undefined ? "" : `@e${instance.epoch}`}`,
        )
        .join(" ");
      this.write(`+${(snapshot.elapsedMs / 1000).toFixed(1)}s ${roles} | ${jobLine(snapshot.job).trim()}\n`);
    }
  }

  /** Leaves the last frame on screen; later output starts below it. */
  close(): void {
    this.drawnLines = 0;
  }

  private clear(): void {
    if (this.drawnLines === 0) return;
    moveCursor(this.out, 0, -this.drawnLines);
    clearScreenDown(this.out);
  }

  private write(text: string): void {
    this.out.write(text);
  }
}

function instanceTable(snapshot: LiveSnapshot): string[] {
  const rows = [["instance", "pid", "role", "epoch", "last step"]];
  for (const instance of snapshot.instances) {
    const step =
      instance.lastStep === undefined
        ? "-"
        : `${instance.lastStep.outcome} (${Math.max(0, (Date.now() - instance.lastStep.atMs) / 1000).toFixed(0)}s ago)`;
    const role = instance.exit?.killedByRunner === true ? "dead (killed)" : instance.role;
    rows.push([
      instance.name,
      String(instance.pid ?? "-"),
      role,
      instance.epoch === undefined ? "-" : String(instance.epoch),
      step,
    ]);
  }
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length))) ?? [];
  return rows.map((row) => `  ${row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join("  ")}`);
}

/** "Job 1a2b3c4d running [██████░░░░] 52% done 104/200, failed 0, dispatched 150". */
function jobLine(job: JobProgress | undefined): string {
  if (job === undefined) return "  job: not submitted yet";
  const { total, done, failed, dispatched } = job.progress;
  const ratio = total === 0 ? 0 : Math.min(1, (done + failed) / total);
  const filled = Math.round(ratio * 24);
  return `  job ${job.id.slice(0, 8)} ${job.status.padEnd(9)} [${"█".repeat(filled)}${"░".repeat(24 - filled)}] ${String(Math.round(ratio * 100)).padStart(3)}%  done ${done}/${total}, failed ${failed}, dispatched ${dispatched}`;
}
