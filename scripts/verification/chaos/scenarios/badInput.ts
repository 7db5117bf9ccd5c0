import { BlobServiceClient, type ContainerClient } from "@azure/storage-blob";
import { QueueClient } from "@azure/storage-queue";
import { submitJob } from "../../../../src/app/operations";
import { delay } from "../../../../src/library/util/delay";
import { fieldText } from "../../../../dev/src/local/eventLog";
import { runScenario, type ScenarioOptions, type ScenarioResult, type ScenarioRun } from "../scenario";
import { badMessages, badSubmissions, mixedJob, type BadMessage } from "./badInputs";

/** Bodies posted to `POST /api/jobs` of a running instance: each must get a 400. */
const BAD_HTTP_BODIES: readonly [string, string][] = [
  ["invalid JSON", "{not json"],
  ["JSON array", "[]"],
  ["__proto__ body", '{"__proto__":{"kind":"group-by"},"items":[{"inline":"a"}]}'],
];

/**
 * A flood of bad input mixed with good work: refused submissions (through the app and over HTTP), a good job, a job
 * mixing good items (keys like `__proto__`) with bad ones, and bad raw messages on the work and results queues in
 * seeded order while the jobs run. Checks: refused submissions store nothing; every bad message is reported with a
 * reason (a `message-rejected` event naming it, or the host's undecodable-message line) and sits in a poison queue;
 * bad items are in their job's failed list with a reason; the good job and the good items are counted exactly once.
 */
export function badInputScenario(options: ScenarioOptions): Promise<ScenarioResult> {
  return runScenario("bad-input", options, async (run) => {
    const { cluster } = run;
    const { connectionString } = cluster.azurite;
    const instances = await run.startInstances("instance", 3);
    const blobs = BlobServiceClient.fromConnectionString(connectionString);
    const stored = [
      blobs.getContainerClient(cluster.settings.SYSTEM_CONTAINER),
      blobs.getContainerClient(cluster.settings.INPUT_CONTAINER),
    ];
    const refused = await refuseSubmissions(run, stored, instances[0]?.process.state.httpPort);

    const good = await run.jobs.submitDemo("good", 40, options.seed);
    const mixed = mixedJob();
    await run.jobs.submit(
      "mixed",
      { kind: "group-by", params: { format: "csv", keyField: "region", valueField: "amount" }, items: mixed.items },
      [],
      mixed.expected,
      mixed.badItems,
    );

    const copies = options.quick ? 1 : 3;
    const flood = shuffle(run, Array.from({ length: copies }, () => badMessages(good.id, good.itemCount)).flat());
    const queues = {
      work: new QueueClient(connectionString, cluster.settings.WORK_QUEUE),
      results: new QueueClient(connectionString, cluster.settings.RESULTS_QUEUE),
    };
    const sent: { id: string; message: BadMessage }[] = [];
    const startMs = Date.now();
    for (const message of flood) {
      const response = await queues[message.queue].sendMessage(message.body);
      sent.push({ id: response.messageId, message });
      await delay(run.random.int(10, 150));
    }
    run.recordFault(
      {
        kind: "bad-input",
        target: "queues",
        startMs,
        endMs: Date.now(),
        leaderCheck: false,
        count: sent.length + refused,
      },
      { messages: sent.length, refusedSubmissions: refused },
    );
    options.log(`  sent ${sent.length} bad messages and ${refused} bad submissions`);

    run.afterJobs.push(async () => {
      const isReported = ({ id, message }: (typeof sent)[number]): boolean =>
        cluster.undecodable.has(id) ||
        cluster.records.some(
          (record) =>
            record.type === "message-rejected" &&
            fieldText(record.reason) !== "" &&
            (record.messageId === id ||
              (message.marker !== undefined && fieldText(record.reason).includes(message.marker))),
        );
      const deadline = Date.now() + 30_000;
      while (sent.some((entry) => !isReported(entry)) && Date.now() < deadline) await delay(500);
      const unreported = sent.filter((entry) => !isReported(entry));
      run.unreportedBadItems += unreported.length;
      for (const { id, message } of unreported)
        run.fail(`bad message not reported with a reason: ${message.label} (${id})`);
      const poison = async (name: string): Promise<number> =>
        (await new QueueClient(connectionString, name).getProperties()).approximateMessagesCount ?? 0;
      const inPoison = {
        [`${cluster.settings.WORK_QUEUE}-poison`]: await poison(`${cluster.settings.WORK_QUEUE}-poison`),
        [`${cluster.settings.RESULTS_QUEUE}-poison`]: await poison(`${cluster.settings.RESULTS_QUEUE}-poison`),
      };
      const totalPoison = Object.values(inPoison).reduce((sum, count) => sum + count, 0);
      if (totalPoison < sent.length)
        run.fail(`only ${totalPoison} messages in the poison queues for ${sent.length} bad messages`);
      const byLabel = new Map<string, string>();
      for (const { id, message } of sent) {
        const report = cluster.records.find(
          (record) =>
            record.type === "message-rejected" &&
            (record.messageId === id ||
              (message.marker !== undefined && fieldText(record.reason).includes(message.marker))),
        );
        byLabel.set(
          message.label,
          cluster.undecodable.get(id) ?? (report === undefined ? "(not reported)" : fieldText(report.reason)),
        );
      }
      Object.assign(run.details, {
        badMessages: sent.length,
        refusedSubmissions: refused,
        poisonQueues: inPoison,
        reasons: Object.fromEntries(byLabel),
      });
    });
  });
}

/**
 * Submits every bad submission (app API and HTTP); each must be refused with field errors and store nothing (in the
 * system and input containers).
 */
async function refuseSubmissions(
  run: ScenarioRun,
  containers: ContainerClient[],
  httpPort: number | undefined,
): Promise<number> {
  const before = await countBlobs(containers);
  const client = run.cluster.client();
  let count = 0;
  for (const { label, body } of badSubmissions()) {
    count++;
    const result = await submitJob(client, body);
    if (result.ok) run.fail(`bad submission "${label}" was accepted as job ${result.id}`);
    else if (result.errors.length === 0) run.fail(`bad submission "${label}" was refused without a field error`);
  }
  if (httpPort === undefined) run.fail("no HTTP port to post bad submissions to");
  else {
    for (const [label, text] of BAD_HTTP_BODIES) {
      count++;
      const response = await fetch(`http://127.0.0.1:${httpPort}/api/jobs`, {
        method: "POST",
        body: text,
        headers: { "content-type": "application/json" },
      });
      if (response.status !== 400) run.fail(`POST /api/jobs with ${label} answered ${response.status}, not 400`);
    }
  }
  const after = await countBlobs(containers);
  if (after !== before) run.fail(`refused submissions stored ${after - before} blob(s)`);
  return count;
}

async function countBlobs(containers: ContainerClient[]): Promise<number> {
  let count = 0;
  for (const container of containers) {
    if (!(await container.exists())) continue;
    for await (const blob of container.listBlobsFlat()) if (blob.name !== "") count++;
  }
  return count;
}

function shuffle<T>(run: ScenarioRun, items: T[]): T[] {
  for (let index = items.length - 1; index > 0; index--) {
    const other = run.random.int(0, index);
    const a = items[index] as T;
    items[index] = items[other] as T;
    items[other] = a;
  }
  return items;
}
