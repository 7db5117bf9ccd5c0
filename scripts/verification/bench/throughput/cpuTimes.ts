import { readFileSync } from "node:fs";
import { round } from "./opsBreakdown";

/** CPU time of the benchmark's processes, from Linux's /proc: what each side of a ratio spent on the job. */

/** USER_HZ: what /proc counts CPU time in (100 on every Linux architecture Node runs on; `getconf CLK_TCK`). */
const CLOCK_TICKS_PER_S = 100;

export interface CpuTimes {
  cpuS: number;
  runQueueWaitS: number;
}

/**
 * A process's CPU time so far (every thread, user + system: /proc/PID/stat fields 14 and 15, in clock ticks of 10 ms)
 * and its main thread's time waiting in the run queue (/proc/PID/task/PID/schedstat, second field, ns); Linux only,
 * undefined elsewhere or when the process is gone.
 */
export function readCpuTimes(pid: number): CpuTimes | undefined {
  try {
    return parseCpuTimes(
      readFileSync(`/proc/${pid}/stat`, "utf8"),
      readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8"),
    );
  } catch {
    return undefined;
  }
}

/** {@link readCpuTimes} from the two files' texts; undefined when either is not what Linux writes. */
export function parseCpuTimes(stat: string, schedstat: string): CpuTimes | undefined {
  // Fields after the command name, which is in parentheses and may hold spaces and ")": field 3 is the first here.
  const close = stat.lastIndexOf(")");
  if (close === -1) return undefined;
  const fields = stat.slice(close + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  const waitNs = Number(schedstat.trim().split(" ")[1]);
  if (fields.length < 13 || !Number.isFinite(ticks) || !Number.isFinite(waitNs)) return undefined;
  return { cpuS: ticks / CLOCK_TICKS_PER_S, runQueueWaitS: waitNs / 1e9 };
}

/** The sum of figures, rounded to 10 ms; undefined when any is missing (a process whose /proc could not be read). */
export function sumOf(values: readonly (number | undefined)[]): number | undefined {
  if (values.length === 0 || values.some((value) => value === undefined)) return undefined;
  return round(
    values.reduce<number>((sum, value) => sum + (value ?? 0), 0),
    2,
  );
}
