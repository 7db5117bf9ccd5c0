import { type JobStatus } from "azure-leader-coordinator/internal";
import { aggregatesMatch, asAggregate, type Aggregate } from "./demoData.js";
import { aggregateTable } from "./report.js";

/**
 * The end of a local run: whether it went as asked (its exit code) and the summary printed for people — the job's
 * status and aggregate (for the demo, beside the one computed independently), its duration, the work units each
 * instance ran, whom `--kill-leader-after` killed, and where the event log, timeline and logs are.
 */

/** An instance of the run, as it ended. */
export interface InstanceSummary {
  name: string;
  /** The app's id for the process, as in the event log. */
  instanceId: string;
  pid: number | undefined;
  startedAt: string;
  exit?: { code: number | null; signal: string | null; at: string; killedByRunner: boolean };
}

/**
 * What a run did. `exitCode` is 0 when the job completed (the demo's with the expected aggregate), or, without a job,
 * when the run ended as asked (its duration, or a stop).
 */
export interface LocalRunResult {
  exitCode: number;
  /** Why the run failed, for a person; undefined on success. */
  problem?: string;
  storage: "azurite" | "external";
  /** Where the submitted job came from; undefined without a job. */
  jobSource?: string;
  jobId?: string;
  /** The job's final status as the app reports it (its HTTP route, through the kind's view). */
  status?: JobStatus;
  /** The demo's aggregate as the app reports it; undefined for other jobs. */
  aggregate?: Aggregate;
  /** The demo's aggregate computed independently; undefined for other jobs. */
  expected?: Aggregate;
  /** For the demo: whether the two agree. */
  matches?: boolean;
  /** The status page of the first instance that serves HTTP (printed at start; gone when the run ends). */
  statusUrl?: string;
  eventsPath: string;
  timelinePath: string;
  logsDir: string;
  instances: InstanceSummary[];
  /** Work units each instance's worker finished (its host's "Executed" lines), by instance name. */
  unitsByInstance: Record<string, number>;
  /** With `killLeaderAfterS`: who was killed mid-job, with the job how far (or why nobody was). */
  kill?: string;
}

/** Decides the exit code and prints the summary. */
export function finish(result: LocalRunResult, print: (text: string) => void, interrupted: boolean): LocalRunResult {
  const withJob = result.jobSource !== undefined;
  if (result.expected !== undefined) {
    result.aggregate = asAggregate(result.status?.aggregate);
    result.matches = aggregatesMatch(result.aggregate, result.expected);
  }
  const ended = result.status?.status;
  if (result.problem === undefined && interrupted && withJob) result.problem = "Interrupted before the run finished.";
  else if (result.problem !== undefined || !withJob || interrupted) {
    // the problem found, or a run without a job that ended as asked
  } else if (ended === "cancelled" || ended === "expired")
    result.problem = `The job ended as ${ended} before completing.`;
  else if (ended !== "completed") result.problem = `The job did not complete in time (status ${ended ?? "unknown"}).`;
  else if (result.matches === false)
    result.problem = "The job completed, but its aggregate differs from the expected one.";
  else if (result.kill !== undefined && !result.kill.startsWith("killed"))
    result.problem = `--kill-leader-after: ${result.kill}.`;
  result.exitCode = result.problem === undefined ? 0 : interrupted ? 130 : 1;
  printSummary(result, print);
  return result;
}

function printSummary(result: LocalRunResult, print: (text: string) => void): void {
  const progress = result.status?.progress;
  print("");
  if (result.jobSource !== undefined) {
    print(
      `Job ${result.jobId ?? "(not submitted)"} (${result.jobSource}): ${result.status?.status ?? "unknown"}${progress === undefined ? "" : ` — done ${progress.done}/${progress.total}, failed ${progress.failed}`}`,
    );
    const expected = result.expected;
    if (expected !== undefined) for (const line of aggregateTable(result.aggregate, expected)) print(line);
    else if (result.status !== undefined) print(`Aggregate: ${JSON.stringify(result.status.aggregate)}`);
    const seconds = jobSeconds(result.status);
    if (seconds !== undefined && progress !== undefined)
      print(
        `Duration: ${seconds.toFixed(1)} s from submission to ${result.status?.status ?? "end"}, ${Math.round((progress.done + progress.failed) / seconds)} items/s`,
      );
  }
  const units = result.instances.map((instance) => `${instance.name} ${result.unitsByInstance[instance.name] ?? 0}`);
  print(`Work units per instance: ${units.join(", ")}`);
  if (result.kill !== undefined) print(`Kill: ${result.kill}`);
  if (result.matches !== undefined) print(`Aggregate matches the expected one: ${result.matches ? "yes" : "no"}`);
  print(`Events:   ${result.eventsPath}`);
  print(`Timeline: ${result.timelinePath}`);
  print(`Logs:     ${result.logsDir}`);
  if (result.problem !== undefined) print(`\n${result.problem}`);
}

/** Seconds from the job's submission to its end, from its status; undefined while it runs. */
function jobSeconds(status: JobStatus | undefined): number | undefined {
  if (status?.endedAt === undefined) return undefined;
  return Math.max(0.001, (Date.parse(status.endedAt) - Date.parse(status.createdAt)) / 1000);
}
