import type { RequestCount } from "./requestCounter";

/**
 * Cost per million items at list prices (USD): storage requests by price class, function executions, and an estimate
 * of execution time (GB-s). The prices are the ones printed with every report; change them here.
 */

/** List prices used (USD). */
export const PRICES = {
  /** Queue Storage, any operation (per million): $0.004 per 10,000. */
  queueOperationPerMillion: 0.4,
  /**
   * Blob Storage hot LRS write operations — and, at the same price, list and create-container operations (per million).
   */
  blobWritePerMillion: 5.5,
  /** Blob Storage hot LRS read and all other operations (per million); deletes are free. */
  blobReadOtherPerMillion: 0.44,
  /**
   * Table Storage, standard LRS, any transaction (per million): $0.00036 per 10,000
   * (https://azure.microsoft.com/pricing/details/storage/tables/); a batch (entity group transaction) is billed per
   * entity it carries. Our app uses no tables; the Durable Task Framework's peer does (../peer/).
   */
  tableTransactionPerMillion: 0.036,
  /** Flex Consumption on-demand executions (per million). */
  executionPerMillion: 0.4,
  /** Flex Consumption on-demand execution time, per GB-s (docs/how-to/tune-cost.md). */
  gbSecond: 0.000026,
  /** Memory of a Flex Consumption instance (the default instanceMemoryMB, 2,048). */
  instanceGb: 2,
} as const;

/** The prices as a sentence, for reports. */
export const PRICES_NOTE =
  "USD list prices: queue operation $0.40/M; blob hot LRS write $5.50/M (list and create container at the write price, as Azure bills them), read and other operations $0.44/M, delete free; table transaction $0.036/M (a batch per entity); Flex Consumption executions $0.40/M, execution time $0.000026/GB-s at 2 GB per instance";

export type PriceClass = "queue" | "blobWrite" | "blobReadOther" | "free";

/** Which price a request pays. */
export function priceClassOf(count: Pick<RequestCount, "service" | "method" | "path" | "comp">): PriceClass {
  if (count.service === "queue") return "queue";
  if (count.method === "DELETE") return "free";
  if (count.comp === "list") return "blobWrite";
  // PUT of a blob, a block or a block list; PUT on a container (path "") creates it.
  if (
    count.method === "PUT" &&
    (count.comp === "" || count.comp === "block" || count.comp === "blocklist" || count.comp === "appendblock")
  )
    return "blobWrite";
  return "blobReadOther";
}

/** Requests by price class. */
export function requestsByPriceClass(counts: readonly RequestCount[]): Record<PriceClass, number> {
  const classes: Record<PriceClass, number> = { queue: 0, blobWrite: 0, blobReadOther: 0, free: 0 };
  for (const count of counts) classes[priceClassOf(count)] += count.requests;
  return classes;
}

/** One implementation's cost per million items. */
export interface CostPerMillion {
  /** Storage requests and executions, at the list prices. */
  totalUSD: number;
  storageUSD: number;
  executionsUSD: number;
  /**
   * Execution time (GB-s) at list price, when it was estimated ({@link billedGbSeconds}: per instance, each activity
   * period at least 1 s); not in totalUSD.
   */
  computeEstimateUSD: number | undefined;
  /** Storage, executions and execution time: every cost counted (undefined when execution time was not estimated). */
  allInUSD: number | undefined;
  /**
   * Execution time if every execution were billed on its own, at least 1 s each ({@link perExecutionGbSeconds}): the
   * bound should Flex bill the 1 s minimum per execution rather than per activity period (its docs do not say).
   */
  computeUpperUSD: number | undefined;
  byClass: Record<PriceClass, number>;
}

/**
 * Cost per million items of `items` items that took these requests, executions and (estimated) GB-s; `gbSecondsUpper`
 * is the per-execution bound of the same executions.
 */
export function costPerMillion(
  byClass: Record<PriceClass, number>,
  executions: number,
  items: number,
  gbSeconds?: number,
  gbSecondsUpper?: number,
): CostPerMillion {
  const scale = 1_000_000 / Math.max(1, items);
  const perMillion = (requests: number, price: number): number => (requests * scale * price) / 1_000_000;
  const byClassUSD: Record<PriceClass, number> = {
    queue: perMillion(byClass.queue, PRICES.queueOperationPerMillion),
    blobWrite: perMillion(byClass.blobWrite, PRICES.blobWritePerMillion),
    blobReadOther: perMillion(byClass.blobReadOther, PRICES.blobReadOtherPerMillion),
    free: 0,
  };
  const storageUSD = byClassUSD.queue + byClassUSD.blobWrite + byClassUSD.blobReadOther;
  const executionsUSD = perMillion(executions, PRICES.executionPerMillion);
  const computeUSD = gbSeconds === undefined ? undefined : gbSeconds * scale * PRICES.gbSecond;
  return {
    totalUSD: round4(storageUSD + executionsUSD),
    storageUSD: round4(storageUSD),
    executionsUSD: round4(executionsUSD),
    computeEstimateUSD: computeUSD === undefined ? undefined : round4(computeUSD),
    allInUSD: computeUSD === undefined ? undefined : round4(storageUSD + executionsUSD + computeUSD),
    computeUpperUSD: gbSecondsUpper === undefined ? undefined : round4(gbSecondsUpper * scale * PRICES.gbSecond),
    byClass: {
      queue: round4(byClassUSD.queue),
      blobWrite: round4(byClassUSD.blobWrite),
      blobReadOther: round4(byClassUSD.blobReadOther),
      free: 0,
    },
  };
}

/**
 * Billed execution time of invocations, in GB-s, the way Flex Consumption bills an on-demand instance: "the total
 * amount of memory provisioned while each on demand instance is actively executing functions"; "the minimum billable
 * execution period … is 1,000 ms. Past that, the billable activity period is rounded up to the nearest 100 ms"
 * (https://learn.microsoft.com/azure/azure-functions/flex-consumption-plan#billing). So: per instance, the time at
 * least one invocation runs on it (concurrent invocations share it), each activity period at least 1 s and rounded up
 * to 100 ms, times the instance's memory. `intervals` are [startMs, endMs] per instance. The benchmark places the
 * local host's invocations as Flex would: it scales each function but HTTP, Blob and Durable ones on instances of its
 * own ("per-function scaling", https://learn.microsoft.com/azure/azure-functions/event-driven-scaling), where the local
 * host runs every function in every instance: the workers one instance per process, the wake-up function on one
 * instance (target-based scaling asks one instance per 16 queued messages; wake-ups are a few), the timer on one.
 */
export function billedGbSeconds(
  intervalsByInstance: readonly (readonly [number, number])[][],
  instanceGb: number = PRICES.instanceGb,
): number {
  let seconds = 0;
  for (const intervals of intervalsByInstance) {
    const sorted = [...intervals].sort((a, b) => a[0] - b[0]);
    let current: [number, number] | undefined;
    const close = (): void => {
      if (current !== undefined) seconds += Math.max(1, Math.ceil((current[1] - current[0]) / 100) / 10);
    };
    for (const [start, end] of sorted) {
      if (current !== undefined && start <= current[1]) current[1] = Math.max(current[1], end);
      else {
        close();
        current = [start, end];
      }
    }
    close();
  }
  return seconds * instanceGb;
}

/**
 * The same invocations' execution time if each were billed on its own — at least 1 s, rounded up to 100 ms — whatever
 * ran beside it: an upper bound, should the 1 s minimum apply per execution rather than per activity period.
 */
export function perExecutionGbSeconds(
  intervalsByInstance: readonly (readonly [number, number])[][],
  instanceGb: number = PRICES.instanceGb,
): number {
  let seconds = 0;
  for (const intervals of intervalsByInstance)
    for (const [start, end] of intervals) seconds += Math.max(1, Math.ceil((end - start) / 100) / 10);
  return seconds * instanceGb;
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}
