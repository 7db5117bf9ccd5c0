import { cpus } from "node:os";
import type { Side } from "../hostProcess";
import { measuredRow, type Row } from "../rows";
import { base64, onBothSides, type Scenario } from "../scenario";
import type { HostSpec } from "../spec";
import { waitUntil, type World } from "../world";

/**
 * How many messages one host runs at once: the queue holds more than it can take, half the messages of a batch take
 * 1 s and half 4 s (so that a batch thins out to the threshold while the rest still runs, and the next batch joins
 * them), and the functions count their own concurrent invocations. Three host.json shapes: batchSize 16 with
 * newBatchThreshold 8 (this repository's), batchSize 4 with the threshold left out, and the same on a Dynamic SKU
 * (WEBSITE_SKU=Dynamic, the Consumption plan; Flex Consumption is not Dynamic).
 */

const SHORT_MS = 1000;
const LONG_MS = 4000;

interface Variant {
  id: string;
  claim: string;
  messages: number;
  queues: HostSpec["queues"];
  websiteSku?: string;
  /** What the queues extension's rule gives on this machine. */
  expected: number;
}

function variants(): Variant[] {
  const processors = cpus().length;
  return [
    {
      id: "queue.concurrency",
      claim: "One host runs at most batchSize + newBatchThreshold messages of a queue at once (16 + 8)",
      messages: 36,
      queues: { batchSize: 16, newBatchThreshold: 8, maxPollingIntervalMs: 1000 },
      expected: 24,
    },
    {
      id: "queue.default-threshold",
      claim: `newBatchThreshold left out: batchSize / 2 × the processor count (${processors} here) unless WEBSITE_SKU is Dynamic`,
      messages: 16,
      queues: { batchSize: 4, maxPollingIntervalMs: 1000 },
      expected: 4 + 2 * processors,
    },
    {
      id: "queue.default-threshold-dynamic",
      claim: "newBatchThreshold left out on a Dynamic SKU (WEBSITE_SKU=Dynamic): batchSize / 2",
      messages: 16,
      queues: { batchSize: 4, maxPollingIntervalMs: 1000 },
      websiteSku: "Dynamic",
      expected: 6,
    },
  ];
}

async function maxRunning(world: World, side: Side, variant: Variant): Promise<number> {
  const name = world.unique(`conc-${side}`);
  const queue = await world.createQueue(name);
  for (let index = 0; index < variant.messages; index++)
    await queue.sendMessage(base64(`sleep-${index % 2 === 0 ? SHORT_MS : LONG_MS}-${index}`));
  const host = await world.start(side, {
    hostId: name,
    functions: ["Work"],
    workQueue: name,
    queues: variant.queues,
    websiteSku: variant.websiteSku,
  });
  await waitUntil(
    () => host.invocations.filter((record) => record.phase === "end").length >= variant.messages,
    variant.messages * LONG_MS + 30_000,
  );
  await world.stop(host);
  return Math.max(0, ...host.invocations.map((record) => record.running ?? 0));
}

async function rowOf(world: World, variant: Variant): Promise<Row> {
  const measured = await onBothSides((side) => maxRunning(world, side, variant));
  return measuredRow(
    variant.id,
    variant.claim,
    { maxRunning: measured.sdk },
    { maxRunning: measured.local },
    measured.sdk === measured.local,
    `the most invocations running at once, equal on both (the rule gives ${variant.expected} here)`,
  );
}

export const queueConcurrencyScenario: Scenario = {
  name: "queue-concurrency",
  quick: true,
  run: (world) => Promise.all(variants().map((variant) => rowOf(world, variant))),
};
