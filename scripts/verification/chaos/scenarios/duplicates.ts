import { QueueClient } from "@azure/storage-queue";
import { groupRecords, mergeGroups, type GroupByParams } from "../../../../src/groupBy/groupBy";
import {
  unitWorkMessageSchema,
  type UnitResultMessage,
  type UnitWorkMessage,
} from "../../../../src/coordination/ports/messages";
import { delay } from "../../../../src/library/util/delay";
import { createDemoJob } from "../../../../dev/src/local/demoData";
import { UNIT_DEFAULTS } from "../cluster";
import { runScenario, type ScenarioOptions, type ScenarioResult } from "../scenario";

const ITEMS = 80;
const encode = (text: string): string => Buffer.from(text, "utf8").toString("base64");

/**
 * Duplicate delivery of whole work units: while a job runs, the same work and result messages are delivered again —
 * copies of units the leader dispatched (peeked from the queue), and unit results rebuilt exactly as the worker builds
 * them from a peeked unit (so a copy often arrives before the original), 1–3 copies each at seeded moments; and after
 * the job completed, a burst of replayed unit results. Checks: every item counted exactly once (aggregate equal to the
 * independently computed one), the leader saw duplicates, and the completed job's state is never written again.
 */
export function duplicatesScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario("duplicate-delivery", options, async (run) => {
    const { cluster } = run;
    const { connectionString } = cluster.azurite;
    const workQueue = new QueueClient(connectionString, cluster.settings.WORK_QUEUE);
    const resultsQueue = new QueueClient(connectionString, cluster.settings.RESULTS_QUEUE);
    // Workers start only once a unit has been seen on the work queue: the leader dispatches a whole job in one pass
    // and workers took it off the queue before a peek could see it (a CI run found "no work unit was seen on the work
    // queue to duplicate"). The coordinators lead and fold from the start; the copies still race the originals.
    // Leaders with the app's default units (issue 24): the rule sizes this job's units, not the suite's 8 items.
    await run.startInstances("instance", 3, { "AzureWebJobs.worker.Disabled": "true", ...UNIT_DEFAULTS });
    let workersStarted = false;
    const startWorkers = (): void => {
      if (workersStarted) return;
      workersStarted = true;
      for (const name of ["worker-1", "worker-2"])
        cluster.startInstance(name, { "AzureWebJobs.coordinator.Disabled": "true" });
    };
    const job = await run.jobs.submitDemo("duplicates", ITEMS, options.seed);
    const demo = createDemoJob(ITEMS, `chaos/duplicates-${options.seed}`, options.seed);
    const texts = new Map(demo.blobs.map((blob) => [blob.name, blob.text]));
    const params: GroupByParams = demo.spec.params;
    /** The result a worker sends for a unit (every item of the demo job succeeds). */
    const resultText = (unit: UnitWorkMessage): string => {
      const partials = unit.inputs.map((input) =>
        groupRecords("inline" in input ? input.inline : (texts.get(input.blob) ?? ""), params),
      );
      return JSON.stringify({
        v: 2,
        jobId: job.id,
        first: unit.first,
        count: unit.inputs.length,
        done: [[unit.first, unit.first + unit.inputs.length - 1]],
        partial: partials.reduce(mergeGroups, []),
        failed: [],
      } satisfies UnitResultMessage);
    };
    /** Units seen on the work queue, for replays after completion. */
    const units = new Map<number, UnitWorkMessage>();
    const sent = { peekedWorkCopies: 0, rebuiltWork: 0, rebuiltResults: 0, replayedAfterCompletion: 0 };
    const durationMs = options.quick ? 15_000 : 30_000;
    const until = Date.now() + durationMs;
    while (Date.now() < until) {
      const peeked = await workQueue.peekMessages({ numberOfMessages: 32 }).catch(() => undefined);
      const original =
        peeked?.peekedMessageItems[run.random.int(0, Math.max(0, (peeked.peekedMessageItems.length || 1) - 1))];
      const unit =
        original === undefined
          ? undefined
          : unitWorkMessageSchema.safeParse(JSON.parse(Buffer.from(original.messageText, "base64").toString("utf8")))
              .data;
      if (original !== undefined && unit !== undefined) {
        units.set(unit.first, unit);
        await workQueue.sendMessage(original.messageText);
        sent.peekedWorkCopies++;
        for (let copy = run.random.int(1, 3); copy > 0; copy--) {
          if (run.random.chance(0.5)) {
            await workQueue.sendMessage(encode(JSON.stringify(unit)));
            sent.rebuiltWork++;
          } else {
            await resultsQueue.sendMessage(encode(resultText(unit)));
            sent.rebuiltResults++;
          }
        }
      }
      if (units.size > 0 || Date.now() > until - durationMs / 2) startWorkers();
      await delay(run.random.int(100, 400));
    }
    startWorkers();
    const now = Date.now();
    run.recordFault(
      {
        kind: "duplicate-delivery",
        target: "queues",
        startMs: until - durationMs,
        endMs: now,
        leaderCheck: false,
        count: sent.peekedWorkCopies + sent.rebuiltWork + sent.rebuiltResults,
      },
      { ...sent },
    );
    options.log(
      `  duplicated ${sent.peekedWorkCopies + sent.rebuiltWork} work and ${sent.rebuiltResults} result messages`,
    );
    run.afterJobs.push(async () => {
      // Replays after completion: the job is done, so these must change nothing.
      const seen = [...units.values()];
      if (seen.length === 0) run.fail("no work unit was seen on the work queue to duplicate");
      for (const unit of seen.slice(0, 10)) await resultsQueue.sendMessage(encode(resultText(unit)));
      sent.replayedAfterCompletion = Math.min(10, seen.length);
      await delay(6000);
      const versions = run.observer.versionsOf(`jobs/${job.id}.json`);
      const completedAt = versions.findIndex((version) => version.job?.status === "completed");
      if (completedAt >= 0 && completedAt < versions.length - 1)
        run.fail(`the completed job was written again ${versions.length - 1 - completedAt} time(s)`);
      const duplicatesSeen = cluster.records.reduce(
        (total, record) =>
          total + (record.type === "step-completed" && typeof record.duplicates === "number" ? record.duplicates : 0),
        0,
      );
      if (duplicatesSeen === 0) run.fail("the leader never saw a duplicate: the injection had no effect");
      // The units the leader made of the job (issue 24: sized by the app's rule), as seen on the work queue.
      const unitItems = [...new Set([...units.values()].map((unit) => unit.inputs.length))].sort((a, b) => a - b);
      Object.assign(run.details, { sent, duplicatesFoldedAway: duplicatesSeen, unitItems });
    });
  });
}
