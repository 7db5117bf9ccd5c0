import type { ContainerClient } from "@azure/storage-blob";
import type { CoordinatorApp } from "../../../src/app/context";
import { getJobStatus, submitJob, type JobStatus } from "../../../src/app/jobs";
import { delay } from "../../../src/library/util/delay";
import { aggregatesMatch, asAggregate, createDemoJob, type Aggregate } from "../../../dev/src/local/demoData";

/**
 * The jobs of a scenario and what each must end as, computed independently of the app: which items are good (each
 * counted exactly once in the aggregate), which are bad (each in the failed list with a reason), and the aggregate.
 */

/** An item input as a submission names it. */
export type ItemSpec = { inline: string } | { blob: string };

/** A job the scenario submitted, with its expected outcome. */
export interface TrackedJob {
  id: string;
  label: string;
  itemCount: number;
  goodItems: number;
  /** Items that must end in the failed list (with a reason). */
  badItems: readonly number[];
  expected: Aggregate;
}

/** How a job ended, judged against its expectation. */
export interface JobVerdict {
  id: string;
  label: string;
  status: string;
  done: number;
  failed: number;
  goodItems: number;
  badItems: number;
  aggregateMatches: boolean;
  lostItems: number;
  doubleCounted: number;
  unreportedBadItems: number;
  problems: string[];
}

/** Submits jobs and judges them at the end. */
export class JobTracker {
  readonly jobs: TrackedJob[] = [];

  constructor(
    private readonly app: CoordinatorApp,
    private readonly inputs: ContainerClient,
  ) {}

  /**
   * Submits a demo job (group-by over seeded CSV rows, every tenth item a blob); `wake: false` leaves it to the timer.
   */
  async submitDemo(label: string, items: number, seed: number, options: { wake?: boolean } = {}): Promise<TrackedJob> {
    const demo = createDemoJob(items, `chaos/${label}-${seed}`, seed);
    return this.submit(label, demo.spec, demo.blobs, demo.expected, [], options);
  }

  /** Uploads `blobs`, submits `spec`, and tracks it. @throws when the app rejects a submission meant to be good. */
  async submit(
    label: string,
    spec: { kind: string; params: unknown; items: ItemSpec[] },
    blobs: readonly { name: string; text: string }[],
    expected: Aggregate,
    badItems: readonly number[],
    options: { wake?: boolean } = {},
  ): Promise<TrackedJob> {
    await Promise.all(
      blobs.map((blob) => this.inputs.getBlockBlobClient(blob.name).upload(blob.text, Buffer.byteLength(blob.text))),
    );
    const submitted = await submitJob(this.app, spec, options);
    if (!submitted.ok)
      throw new Error(
        `The app rejected job ${label}: ${submitted.errors.map((error) => `${error.field}: ${error.message}`).join("; ")}`,
      );
    const job: TrackedJob = {
      id: submitted.id,
      label,
      itemCount: submitted.itemCount,
      goodItems: submitted.itemCount - badItems.length,
      badItems,
      expected,
    };
    this.jobs.push(job);
    return job;
  }

  /** Waits until every job completed; false after `timeoutMs`. */
  async waitAllCompleted(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const statuses = await Promise.all(this.jobs.map((job) => getJobStatus(this.app, job.id).catch(() => undefined)));
      if (statuses.every((status) => status?.status === "completed")) return true;
      if (Date.now() > deadline) return false;
      await delay(500);
    }
  }

  /** Reads each job's final status and judges it. */
  async verdicts(): Promise<JobVerdict[]> {
    return Promise.all(
      this.jobs.map(async (job) => judge(job, await getJobStatus(this.app, job.id).catch(() => undefined))),
    );
  }
}

/** Judges one job's status against its expectation. */
export function judge(job: TrackedJob, status: JobStatus | undefined): JobVerdict {
  const done = status?.progress.done ?? 0;
  const failed = status?.progress.failed ?? 0;
  const problems: string[] = [];
  if (status?.status !== "completed")
    problems.push(
      `job ${job.label} did not complete (status ${status?.status ?? "unknown"}, done ${done}, failed ${failed} of ${job.itemCount})`,
    );
  let lostItems = Math.max(0, job.goodItems - done);
  let doubleCounted = Math.max(0, done - job.goodItems);
  const reported = new Map((status?.failures ?? []).map((failure) => [failure.item, failure.reason]));
  const unreported = job.badItems.filter((item) => (reported.get(item) ?? "").trim() === "");
  const goodButFailed = [...reported.keys()].filter((item) => !job.badItems.includes(item));
  if (goodButFailed.length > 0) {
    // Grouped by reason (each once), so the report says why: the run's stored state is gone when it is read.
    const byReason = new Map<string, number[]>();
    for (const item of goodButFailed) {
      const reason = reported.get(item) ?? "";
      byReason.set(reason, [...(byReason.get(reason) ?? []), item]);
    }
    const groups = [...byReason].map(([reason, items]) => `${items.join(", ")} (${JSON.stringify(reason)})`);
    problems.push(`job ${job.label}: good items recorded as failed: ${groups.join("; ")}`);
  }
  if (failed !== job.badItems.length)
    problems.push(`job ${job.label}: ${failed} failed items, expected ${job.badItems.length}`);
  const aggregate = asAggregate(status?.aggregate);
  const aggregateMatches = aggregatesMatch(aggregate, job.expected);
  if (!aggregateMatches) {
    const rows = (value: Aggregate | undefined): number =>
      Object.values(value ?? {}).reduce((sum, stats) => sum + stats.count, 0);
    problems.push(
      `job ${job.label}: aggregate differs from the independently computed one (${rows(aggregate)} rows counted, ${rows(job.expected)} expected)`,
    );
    // The counts agree but the aggregate does not: some item was counted twice and another lost, or merged wrongly.
    if (rows(aggregate) > rows(job.expected)) doubleCounted = Math.max(doubleCounted, 1);
    else lostItems = Math.max(lostItems, 1);
  }
  if (unreported.length > 0)
    problems.push(`job ${job.label}: bad items without a reported failure: ${unreported.join(", ")}`);
  return {
    id: job.id,
    label: job.label,
    status: status?.status ?? "unknown",
    done,
    failed,
    goodItems: job.goodItems,
    badItems: job.badItems.length,
    aggregateMatches,
    lostItems,
    doubleCounted,
    unreportedBadItems: unreported.length,
    problems,
  };
}

/** The expected group-by aggregate of CSV rows `[key, cents]`, added up in whole cents (exact). Safe for any key. */
export function expectedAggregate(rows: readonly (readonly [string, number])[]): Aggregate {
  const stats = new Map<string, { count: number; sum: number; min: number; max: number }>();
  for (const [key, cents] of rows) {
    const current = stats.get(key);
    stats.set(
      key,
      current === undefined
        ? { count: 1, sum: cents, min: cents, max: cents }
        : {
            count: current.count + 1,
            sum: current.sum + cents,
            min: Math.min(current.min, cents),
            max: Math.max(current.max, cents),
          },
    );
  }
  // fromEntries defines own properties, so a key like "__proto__" is data, as in the app's view.
  return Object.fromEntries(
    [...stats].map(([key, s]) => [key, { count: s.count, sum: s.sum / 100, min: s.min / 100, max: s.max / 100 }]),
  );
}
