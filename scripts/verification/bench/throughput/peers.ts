import { PRICES } from "./cost";

/**
 * What the same items would cost on the services users would pick instead, per million items, from each one's
 * published prices and how it works — estimates, not measurements (neither runs here), each with its sources. The
 * benchmark prints them beside the app's measured cost.
 */

/** One peer's estimate. */
export interface PeerEstimate {
  name: string;
  /** USD per million items. */
  usdPerMillionItems: number;
  /** Whether the figure is a lower bound (costs it leaves out are named in `how`). */
  lowerBound: boolean;
  /** How the figure is made, and what it leaves out. */
  how: string;
  sources: string[];
}

/**
 * AWS Step Functions Express Workflows (https://aws.amazon.com/step-functions/pricing/): $1.00 per million requests
 * (workflow executions started), and duration at $0.00001667 per GB-s ($0.06 per GB-hour, the first 1,000 GB-hours a
 * month; less beyond), rounded up to 100 ms, memory billed in 64 MB chunks.
 */
export const STEP_FUNCTIONS_EXPRESS = {
  requestPerMillion: 1.0,
  gbSecond: 0.06 / 3600,
  minDurationS: 0.1,
  minMemoryGb: 64 / 1024,
} as const;

/** Items per Express execution in the estimate: a Distributed Map's batches of 32 (its ItemBatcher), one each. */
export const STEP_FUNCTIONS_BATCH_ITEMS = 32;

/**
 * Durable Functions on its Azure Storage backend, one activity per item: its message flow
 * (https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-azure-storage-provider) puts each
 * activity on the work-item queue and its result on a control queue — at least 5 queue transactions (work item
 * enqueued, dequeued, deleted; result enqueued, deleted; control-queue reads are batched) — and runs it as one
 * execution; its billing page (https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-billing)
 * says these transactions are billed to the app but gives no count per activity.
 */
export const DURABLE_QUEUE_OPERATIONS_PER_ITEM = 5;

/** The peers' estimates at today's list prices. */
export function peerEstimates(): PeerEstimate[] {
  const express = STEP_FUNCTIONS_EXPRESS;
  const perExecution =
    express.requestPerMillion / 1_000_000 + express.minDurationS * express.minMemoryGb * express.gbSecond;
  const durable =
    (DURABLE_QUEUE_OPERATIONS_PER_ITEM * PRICES.queueOperationPerMillion + PRICES.executionPerMillion) / 1_000_000;
  return [
    {
      name: "Step Functions Express",
      usdPerMillionItems: round4((perExecution * 1_000_000) / STEP_FUNCTIONS_BATCH_ITEMS),
      lowerBound: true,
      how: `one Express execution per batch of ${STEP_FUNCTIONS_BATCH_ITEMS} items, each at most 100 ms and 64 MB: ($${express.requestPerMillion.toFixed(2)} per million requests + 0.1 s × 64 MB × $${express.gbSecond.toFixed(8)}/GB-s) ÷ ${STEP_FUNCTIONS_BATCH_ITEMS}; orchestration only — the Lambda functions that process the items, and the queue or store the results go to, cost extra`,
      sources: ["https://aws.amazon.com/step-functions/pricing/"],
    },
    {
      name: "Durable Functions (Azure Storage)",
      usdPerMillionItems: round4(durable * 1_000_000),
      lowerBound: true,
      how: `one activity per item: at least ${DURABLE_QUEUE_OPERATIONS_PER_ITEM} queue transactions × $${PRICES.queueOperationPerMillion.toFixed(2)}/M + 1 execution × $${PRICES.executionPerMillion.toFixed(2)}/M; History and Instances table writes, orchestrator replays, idle polling and execution time are not counted; measured against the real Durable Task Framework on the same Azurite by npm run bench:peer (bench-results/peer.json, docs/benchmarks.md)`,
      sources: [
        "https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-billing",
        "https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-azure-storage-provider",
      ],
    },
  ];
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
