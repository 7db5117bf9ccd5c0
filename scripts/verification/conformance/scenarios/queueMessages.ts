import type { ProxiedRequest } from "../../../support/countingProxy";
import type { Side } from "../hostProcess";
import { measuredRow, type Row } from "../rows";
import { base64, onBothSides, round, type Scenario } from "../scenario";
import { waitUntil, type World } from "../world";

/**
 * One queue, five messages of each kind a queue trigger meets, on each side: two that succeed, one whose function
 * always throws, one that is not base64, one that is base64 of bytes that are not UTF-8. host.json: maxDequeueCount 5,
 * visibilityTimeout 1 s, maxPollingInterval 1 s. The output and poison queues do not exist beforehand.
 */

const MAX_DEQUEUE = 5;
const VISIBILITY_MS = 1000;
/** 0xff and 0xfe never appear in UTF-8. */
const NOT_UTF8 = Buffer.from([0xff, 0xfe, 0x41, 0x42]).toString("base64");
const NOT_BASE64 = "{not base64}";

interface Sent {
  ok1: string;
  ok2: string;
  fail: string;
  notBase64: string;
  notUtf8: string;
}

interface PoisonSeen {
  text: string;
  id: string;
  ttlDays: number;
}

interface SideResult {
  sent: Sent;
  /** Deliveries per message (from the receives' answers): the dequeue counts seen. */
  deliveries: Record<keyof Sent, number[]>;
  /** Invocations whose body ran, per message. */
  ran: Record<keyof Sent, number>;
  /** Failed executions of Work (a binding failure counts; its body never ran). */
  failedExecutions: number;
  /** Seconds between successive deliveries of the failing message. */
  retryGapsS: number[];
  /** Visibility timeouts the host set: on receive, and when releasing the failing message. */
  receiveVisibilityS: number[];
  releaseVisibilityS: number[];
  /** Deletes of the work queue's messages. */
  deletes: number;
  poison: PoisonSeen[];
  /** `messagettl` of the host's poison sends (absent: the service default). */
  poisonSendTtlS: (number | null)[];
  outputs: string[];
  remaining: number;
}

async function runSide(world: World, side: Side): Promise<SideResult> {
  const name = world.unique(`msg-${side}`);
  const queue = await world.createQueue(name);
  const host = await world.start(side, {
    hostId: name,
    functions: ["Work"],
    workQueue: name,
    queues: {
      batchSize: 16,
      maxDequeueCount: MAX_DEQUEUE,
      visibilityTimeoutMs: VISIBILITY_MS,
      maxPollingIntervalMs: 1000,
    },
  });
  const sendText = async (text: string): Promise<string> => (await queue.sendMessage(text)).messageId;
  const sent: Sent = {
    ok1: await sendText(base64("ok-1")),
    ok2: await sendText(base64("ok-2")),
    fail: await sendText(base64("fail-1")),
    notBase64: await sendText(NOT_BASE64),
    notUtf8: await sendText(NOT_UTF8),
  };
  const poisonQueue = world.queues.getQueueClient(`${name}-poison`);
  const outQueue = world.queues.getQueueClient(`${name}-out`);
  const count = async (client: typeof queue): Promise<number> =>
    (await client.exists()) ? ((await client.getProperties()).approximateMessagesCount ?? 0) : 0;
  await waitUntil(async () => (await count(queue)) === 0 && (await count(outQueue)) >= 2, 90_000);
  // Let the last settle (a delete after a poison copy) reach the proxy.
  await new Promise((done) => setTimeout(done, 500));
  const requests = host.requests().filter((request) => request.service === "queue");
  await world.stop(host);
  const keys = Object.keys(sent) as (keyof Sent)[];
  const deliveries = Object.fromEntries(keys.map((key) => [key, dequeueCountsOf(requests, sent[key])])) as Record<
    keyof Sent,
    number[]
  >;
  const ran = Object.fromEntries(
    keys.map((key) => [
      key,
      host.invocations.filter((record) => record.phase === "start" && record.id === sent[key]).length,
    ]),
  ) as Record<keyof Sent, number>;
  const failTimes = requests
    .filter((request) => request.received?.some((message) => message.id === sent.fail) === true)
    .map((request) => request.atMs);
  const mine = (request: ProxiedRequest): boolean => request.name === name;
  return {
    sent,
    deliveries,
    ran,
    failedExecutions: host.executions.filter((execution) => execution.function === "Work" && !execution.ok).length,
    retryGapsS: failTimes.slice(1).map((atMs, index) => round((atMs - (failTimes[index] ?? atMs)) / 1000)),
    receiveVisibilityS: unique(
      requests.filter((request) => request.received !== undefined && mine(request)).map((r) => r.visibilityTimeoutS),
    ),
    releaseVisibilityS: requests
      .filter((request) => request.method === "PUT" && request.target === `${name}/messages/${sent.fail}`)
      .map((request) => request.visibilityTimeoutS ?? Number.NaN),
    deletes: requests.filter((request) => mine(request) && request.method === "DELETE" && request.path === "message")
      .length,
    poison: await readPoison(poisonQueue),
    poisonSendTtlS: requests
      .filter((request) => request.name === `${name}-poison` && request.method === "POST")
      .map((request) => request.messageTtlS ?? null),
    outputs: (await outQueue.exists())
      ? (await outQueue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems
          .map((message) => Buffer.from(message.messageText, "base64").toString("utf8"))
          .sort()
      : [],
    remaining: await count(queue),
  };
}

function dequeueCountsOf(requests: readonly ProxiedRequest[], id: string): number[] {
  return requests.flatMap((request) =>
    (request.received ?? []).filter((message) => message.id === id).map((message) => message.dequeueCount),
  );
}

function unique(values: readonly (number | undefined)[]): number[] {
  return [...new Set(values.map((value) => value ?? Number.NaN))].sort((a, b) => a - b);
}

async function readPoison(poisonQueue: ReturnType<World["queues"]["getQueueClient"]>): Promise<PoisonSeen[]> {
  if (!(await poisonQueue.exists())) return [];
  const peeked = await poisonQueue.peekMessages({ numberOfMessages: 32 });
  return peeked.peekedMessageItems.map((message) => ({
    text: message.messageText,
    id: message.messageId,
    ttlDays: round((message.expiresOn.getTime() - message.insertedOn.getTime()) / 86_400_000, 3),
  }));
}

function rowsOf(result: Record<Side, SideResult>): Row[] {
  const view = (pick: (side: SideResult) => unknown): [unknown, unknown] => [pick(result.sdk), pick(result.local)];
  const same = (pick: (side: SideResult) => unknown): boolean =>
    JSON.stringify(pick(result.sdk)) === JSON.stringify(pick(result.local));
  const poisonOf = (side: SideResult, key: keyof Sent): { sameText: boolean; newId: boolean } | null => {
    const original = side.sent[key];
    const text = { ok1: "", ok2: "", fail: base64("fail-1"), notBase64: NOT_BASE64, notUtf8: NOT_UTF8 }[key];
    const copy = side.poison.find((message) => message.text === text);
    return copy === undefined ? null : { sameText: true, newId: copy.id !== original };
  };
  const success = (side: SideResult) => ({
    ranOnce: [side.ran.ok1, side.ran.ok2],
    dequeueCounts: [side.deliveries.ok1, side.deliveries.ok2],
    deletes: side.deletes,
    outputs: side.outputs,
  });
  const retry = (side: SideResult) => ({
    dequeueCounts: side.deliveries.fail,
    ran: side.ran.fail,
    releaseVisibilityS: side.releaseVisibilityS,
    minGapS: Math.min(...side.retryGapsS),
  });
  const retriesAgree = (side: SideResult): boolean =>
    JSON.stringify(side.deliveries.fail) === JSON.stringify([1, 2, 3, 4, 5]) &&
    side.ran.fail === MAX_DEQUEUE &&
    // Gaps between the receives' starts: a receive may start a little before the message is visible again.
    Math.min(...side.retryGapsS) >= (VISIBILITY_MS / 1000) * 0.75;
  const notUtf8 = (side: SideResult) => ({
    dequeueCounts: side.deliveries.notUtf8,
    bodyRan: side.ran.notUtf8,
    poisoned: poisonOf(side, "notUtf8"),
  });
  return [
    measuredRow(
      "queue.success",
      "A message whose function succeeds is delivered once, deleted, and its output (the return binding) written after, base64-encoded, to a queue created on first use",
      ...view(success),
      same(success),
      "invocations, dequeue counts, deletes and the decoded output messages, equal on both",
    ),
    measuredRow(
      "queue.receive-visibility",
      "A received message is invisible for 10 minutes (visibilitytimeout=600 on Get Messages)",
      ...view((side) => side.receiveVisibilityS),
      same((side) => side.receiveVisibilityS),
      "the visibilitytimeout of every receive, equal on both",
    ),
    measuredRow(
      "queue.retry",
      "A failing message comes back after visibilityTimeout (Update Message with it), dequeueCount 1…maxDequeueCount",
      ...view(retry),
      retriesAgree(result.sdk) && retriesAgree(result.local) && same((side) => side.releaseVisibilityS),
      "both: dequeue counts 1…5, five runs, releases with visibilitytimeout=1, deliveries ≥ 0.75 s apart",
    ),
    measuredRow(
      "queue.poison",
      "After maxDequeueCount failures the message moves to <queue>-poison (created on first use): same body, new id; the original is deleted",
      ...view((side) => ({ poisoned: poisonOf(side, "fail"), remaining: side.remaining })),
      same((side) => ({ poisoned: poisonOf(side, "fail"), remaining: side.remaining })),
      "the poison copy's body and id, the work queue empty, equal on both",
    ),
    measuredRow(
      "queue.poison-ttl",
      "A poison message expires after the service's default time-to-live, 7 days",
      ...view((side) => ({ sendTtlS: side.poisonSendTtlS, ttlDays: side.poison.map((message) => message.ttlDays) })),
      same((side) => side.poison.map((message) => message.ttlDays)),
      "expiry − insertion of each poison message, equal on both",
    ),
    measuredRow(
      "queue.invalid-base64",
      "A body that is not valid base64 goes to <queue>-poison at once, without running the function",
      ...view((side) => ({
        dequeueCounts: side.deliveries.notBase64,
        ran: side.ran.notBase64,
        poisoned: poisonOf(side, "notBase64"),
      })),
      same((side) => ({
        dequeueCounts: side.deliveries.notBase64,
        ran: side.ran.notBase64,
        poisoned: poisonOf(side, "notBase64"),
      })),
      "deliveries, runs and the poison copy, equal on both",
    ),
    measuredRow(
      "queue.not-utf8",
      "A body that is valid base64 but not UTF-8 fails binding on every delivery (the function's body never runs) and is poisoned after maxDequeueCount",
      ...view(notUtf8),
      same(notUtf8),
      "deliveries, runs of the function's body and the poison copy, equal on both",
    ),
    measuredRow(
      "queue.failed-executions",
      "Each failed delivery is a failed execution ('Executed … (Failed …)'): the throwing function's five and the not-UTF-8 body's five",
      ...view((side) => side.failedExecutions),
      same((side) => side.failedExecutions),
      "the count of failed executions of Work, equal on both",
    ),
  ];
}

export const queueMessagesScenario: Scenario = {
  name: "queue-messages",
  quick: true,
  run: async (world) => rowsOf(await onBothSides((side) => runSide(world, side))),
};
