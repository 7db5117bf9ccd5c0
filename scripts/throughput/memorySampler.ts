import { closeSync, existsSync, openSync, readFileSync, readSync } from "node:fs";

/**
 * Follows a local run's events file to learn the instances' pids (`instance-started`) and who led (`lease-acquired`),
 * and samples each instance's peak resident set size (`VmHWM` in /proc/<pid>/status, Linux) while it runs. VmHWM is
 * the kernel's own high-water mark, so sampling only needs to happen before the process exits, not at its peak.
 */

/** What is known about one instance. */
export interface InstanceMemory {
  name: string;
  pid: number;
  /** Peak RSS (VmHWM) at the last sample, in KiB; undefined when never read. */
  peakRssKiB: number | undefined;
  /** Terms it started (lease-acquired events). */
  termsLed: number;
}

const SAMPLE_EVERY_MS = 250;

/** Samples instances of one run until stopped. */
export class MemorySampler {
  private readonly instances = new Map<string, InstanceMemory>();
  private offset = 0;
  private partial = "";
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly eventsPath: string) {
    this.timer = setInterval(() => this.sample(), SAMPLE_EVERY_MS);
  }

  /** Samples once more, stops, and returns every instance seen. */
  stop(): InstanceMemory[] {
    clearInterval(this.timer);
    this.sample();
    return [...this.instances.values()];
  }

  /** Reads new event lines and every known instance's VmHWM now. */
  sample(): void {
    this.readEvents();
    for (const instance of this.instances.values()) {
      const peak = readPeakRssKiB(instance.pid);
      if (peak !== undefined) instance.peakRssKiB = Math.max(instance.peakRssKiB ?? 0, peak);
    }
  }

  private readEvents(): void {
    if (!existsSync(this.eventsPath)) return;
    const fd = openSync(this.eventsPath, "r");
    try {
      const buffer = Buffer.alloc(64 * 1024);
      for (;;) {
        const read = readSync(fd, buffer, 0, buffer.length, this.offset);
        if (read === 0) break;
        this.offset += read;
        this.partial += buffer.subarray(0, read).toString("utf8");
      }
    } finally {
      closeSync(fd);
    }
    const lines = this.partial.split("\n");
    this.partial = lines.pop() ?? "";
    for (const line of lines) this.onEvent(line);
  }

  private onEvent(line: string): void {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      return;
    }
    if (typeof record !== "object" || record === null) return;
    const { type, instance, pid } = record as { type?: unknown; instance?: unknown; pid?: unknown };
    if (typeof instance !== "string") return;
    if (type === "instance-started" && typeof pid === "number") this.instances.set(instance, { name: instance, pid, peakRssKiB: undefined, termsLed: 0 });
    if (type === "lease-acquired") {
      const known = this.instances.get(instance);
      if (known !== undefined) known.termsLed++;
    }
  }
}

/** VmHWM of a process in KiB; undefined when it is gone or this is not Linux. */
export function readPeakRssKiB(pid: number): number | undefined {
  try {
    const match = /^VmHWM:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match?.[1] === undefined ? undefined : Number(match[1]);
  } catch {
    return undefined;
  }
}
