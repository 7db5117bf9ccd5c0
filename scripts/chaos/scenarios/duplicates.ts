import { QueueClient } from "@azure/storage-queue";
import { groupByKind, type GroupByParams } from "../../../src/coordination/groupBy";
import { delay } from "../../../src/util/delay";
import { createDemoJob } from "../../local/demoData";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";

const ITEMS = 80;
const encode = (text: string): string => Buffer.from(text, "utf8").toString("base64");

/**
 * Duplicate delivery: while a job runs, the same work and result messages are delivered again — copies of work
 * messages the leader dispatched (peeked from the queue), work messages and worker results rebuilt exactly as the app
 * builds them (so a copy may even arrive before the original), 1–3 copies each at seeded moments; and after the job
 * completed, a burst of replayed results. Checks: every item counted exactly once (aggregate equal to the
 * independently computed one), the leader saw duplicates, and the completed job's state is never written again.
 */
export function duplicatesScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario("duplicate-delivery", options, async (run) => {
    const { cluster } = run;
    const { connectionString } = cluster.azurite;
    const workQueue = new QueueClient(connectionString, cluster.settings.WORK_QUEUE);
    const resultsQueue = new QueueClient(connectionString, cluster.settings.RESULTS_QUEUE);
    await run.startInstances("instance", 3);
    const job = await run.jobs.submitDemo("duplicates", ITEMS, options.seed);
    const demo = createDemoJob(ITEMS, `chaos/duplicates-${options.seed}`, options.seed);
    const texts = new Map(demo.blobs.map((blob) => [blob.name, blob.text]));
    const params: GroupByParams = demo.spec.params;
    const workText = (item: number): string => JSON.stringify({ v: 1, jobId: job.id, item, kind: "group-by", params, input: demo.spec.items[item] });
    const resultText = (item: number): string => {
      const input = demo.spec.items[item];
      const text = input === undefined ? "" : "inline" in input ? input.inline : (texts.get(input.blob) ?? "");
      return JSON.stringify({ v: 1, jobId: job.id, item, ok: true, partial: groupByKind.process(text, params) });
    };
    const sent = { peekedWorkCopies: 0, rebuiltWork: 0, rebuiltResults: 0, replayedAfterCompletion: 0 };
    const durationMs = options.quick ? 15_000 : 30_000;
    const until = Date.now() + durationMs;
    while (Date.now() < until) {
      const peeked = await workQueue.peekMessages({ numberOfMessages: 32 }).catch(() => undefined);
      const original = peeked?.peekedMessageItems[run.random.int(0, Math.max(0, (peeked.peekedMessageItems.length || 1) - 1))];
      if (original !== undefined) {
        await workQueue.sendMessage(original.messageText);
        sent.peekedWorkCopies++;
      }
      const item = run.random.int(0, ITEMS - 1);
      for (let copy = run.random.int(1, 3); copy > 0; copy--) {
        if (run.random.chance(0.5)) {
          await workQueue.sendMessage(encode(workText(item)));
          sent.rebuiltWork++;
        } else {
          await resultsQueue.sendMessage(encode(resultText(item)));
          sent.rebuiltResults++;
        }
      }
      await delay(run.random.int(100, 400));
    }
    const now = Date.now();
    run.recordFault({ kind: "duplicate-delivery", target: "queues", startMs: until - durationMs, endMs: now, leaderCheck: false, count: sent.peekedWorkCopies + sent.rebuiltWork + sent.rebuiltResults }, { ...sent });
    options.log(`  duplicated ${sent.peekedWorkCopies + sent.rebuiltWork} work and ${sent.rebuiltResults} result messages`);
    run.afterJobs.push(async () => {
      // Replays after completion: the job is done, so these must change nothing.
      for (let item = 0; item < 10; item++) await resultsQueue.sendMessage(encode(resultText(run.random.int(0, ITEMS - 1))));
      sent.replayedAfterCompletion = 10;
      await delay(6000);
      const versions = run.observer.versionsOf(`jobs/${job.id}.json`);
      const completedAt = versions.findIndex((version) => version.job?.status === "completed");
      if (completedAt >= 0 && completedAt < versions.length - 1) run.fail(`the completed job was written again ${versions.length - 1 - completedAt} time(s)`);
      const duplicatesSeen = cluster.records.reduce((total, record) => total + (record.type === "step-completed" && typeof record.duplicates === "number" ? record.duplicates : 0), 0);
      if (duplicatesSeen === 0) run.fail("the leader never saw a duplicate: the injection had no effect");
      Object.assign(run.details, { sent, duplicatesFoldedAway: duplicatesSeen });
    });
  });
}
