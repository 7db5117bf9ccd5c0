import { randomUUID } from "node:crypto";
import { getJobStatus, hasEnded } from "../../../../src/app/jobs";
import { keys } from "../../../../src/coordination/state/jobState";
import { delay } from "../../../../src/library/util/delay";
import type { HttpSubmitResult } from "../../../../src/cli/jobsHttpApi";
import { round, type Measurement } from "./measurement";

/**
 * (b) Concurrent submits with one `Idempotency-Key` (issue 42): N at once, spread round robin over the instances'
 * own HTTP routes (every instance process answers some), the same body each. Counts the jobs made — specs stored in
 * the system container during the burst, and distinct ids answered — which must be 1; then waits for that job to
 * complete, so the one job is a real one.
 */

/** The measurement's figures. */
export interface DuplicatesResult {
  submits: number;
  instances: number;
  /** Jobs made: specs stored during the burst. */
  jobsMade: number;
  /** Distinct job ids the submits answered. */
  distinctIds: number;
  /** Answers by HTTP status (202 made it, 200 a replay; anything else is a failure). */
  answers: Record<string, number>;
  /** From the first submit's start to the last answer. */
  burstS: number;
  /** The job's end: completed, with its items done. */
  job: { id: string; status: string; done: number; total: number };
}

const BODY = {
  kind: "group-by",
  params: { format: "csv", keyField: "region", valueField: "amount" },
  items: Array.from({ length: 20 }, (_, index) => ({ inline: `region,amount\nd${index % 3},${index}` })),
};

export const duplicateSubmits: Measurement<DuplicatesResult> = {
  name: "duplicates",
  needsCluster: true,
  async run({ args, cluster: start, abortSignal, log }) {
    const cluster = await start();
    const app = cluster.client("bench-limits-duplicates");
    const apis = cluster.httpApis();
    if (apis.length === 0) throw new Error("No instance serves the job routes.");
    const specs = async (): Promise<Set<string>> =>
      new Set((await app.system.list("jobs/", 100_000, { abortSignal })).filter((name) => name.endsWith("/spec.json")));
    const before = await specs();
    const key = `bench-${randomUUID()}`;
    log(`  ${args.duplicates} submits with Idempotency-Key ${key} over ${apis.length} instances…`);
    const startedMs = performance.now();
    const answers: HttpSubmitResult[] = await Promise.all(
      Array.from(
        { length: args.duplicates },
        (_, index) =>
          (apis[index % apis.length] ?? apis[0])?.submit(BODY, { idempotencyKey: key, abortSignal }) ??
          Promise.reject(new Error("no route")),
      ),
    );
    const burstS = (performance.now() - startedMs) / 1000;
    const made = [...(await specs())].filter((name) => !before.has(name));
    const ids = new Set(answers.flatMap((answer) => (answer.ok ? [answer.id] : [])));
    const counts: Record<string, number> = {};
    for (const answer of answers) {
      const label = answer.ok ? (answer.replayed === true ? "200" : "202") : String(answer.httpStatus);
      counts[label] = (counts[label] ?? 0) + 1;
    }
    const id = [...ids][0] ?? made[0]?.slice("jobs/".length, -"/spec.json".length) ?? "";
    log(`  jobs made ${made.length}, distinct ids ${ids.size}; waiting for the job to complete…`);
    const deadline = Date.now() + 300_000;
    let status = await getJobStatus(app, id, { abortSignal });
    while (status !== undefined && !hasEnded(status.status) && Date.now() < deadline) {
      await delay(200, { abortSignal });
      status = await getJobStatus(app, id, { abortSignal });
    }
    // The claim is there, naming the job (the key is remembered as long as the job).
    const claims = await app.system.list(keys.claimPrefix, 100_000, { abortSignal });
    log(`  ${claims.length} idempotency claim(s) stored.`);
    return {
      submits: args.duplicates,
      instances: apis.length,
      jobsMade: made.length,
      distinctIds: ids.size,
      answers: counts,
      burstS: round(burstS, 2),
      job: {
        id,
        status: status?.status ?? "missing",
        done: status?.progress.done ?? 0,
        total: status?.progress.total ?? 0,
      },
    };
  },
  table(result) {
    const answers = Object.entries(result.answers)
      .map(([status, count]) => `${count} × ${status}`)
      .join(", ");
    return [
      `Concurrent duplicate submits (one Idempotency-Key, ${result.instances} instances):`,
      "",
      "| Submits | Jobs made | Distinct ids answered | Answers | Burst, s | The job |",
      "| ---: | ---: | ---: | --- | ---: | --- |",
      `| ${result.submits} | ${result.jobsMade} | ${result.distinctIds} | ${answers} | ${result.burstS.toFixed(2)} | ${result.job.status}, ${result.job.done}/${result.job.total} done |`,
    ].join("\n");
  },
};
