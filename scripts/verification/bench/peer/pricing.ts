import { PRICES, priceClassOf } from "../throughput/cost";
import type { ProxiedRequest, Service } from "../../../support/countingProxy";

/**
 * What one run's storage requests and executions cost per million items, at the one price table of the benchmarks
 * (../throughput/cost.ts PRICES): blob requests by their price class, queue operations, table transactions (a
 * batch billed per entity it carries; `usdPerMillionBatchAsOne` prices each batch as one, should Azure bill it so),
 * and executions (the app's function executions; the framework's orchestrator episodes and activities, each of
 * which Durable Functions bills as a function execution). Execution time (GB-s) is not in it: neither side runs on
 * Flex here.
 */

/** Requests per item by service, and the run's price per million items. */
export interface RunPrice {
  /** HTTP requests per item, by service and in all. */
  requestsPerItem: Record<Service | "total", number>;
  /** Table transactions per item (a batch counted per entity). */
  tableTransactionsPerItem: number;
  executionsPerItem: number;
  /** Storage and executions, USD per million items. */
  usdPerMillion: number;
  storageUsdPerMillion: number;
  /** The same with each table batch billed as one transaction. */
  usdPerMillionBatchAsOne: number;
}

/** Prices `requests` and `executions` of a run of `items` items. */
export function priceRun(requests: readonly ProxiedRequest[], executions: number, items: number): RunPrice {
  const perItem = (count: number): number => round(count / Math.max(1, items), 4);
  const byService: Record<Service, number> = { blob: 0, queue: 0, table: 0 };
  let storageUSD = 0;
  let tableTransactions = 0;
  for (const request of requests) {
    byService[request.service] += 1;
    if (request.service === "table") {
      tableTransactions += request.transactions;
      continue;
    }
    const priceClass = priceClassOf({ ...request, service: request.service });
    storageUSD +=
      priceClass === "queue"
        ? PRICES.queueOperationPerMillion
        : priceClass === "blobWrite"
          ? PRICES.blobWritePerMillion
          : priceClass === "blobReadOther"
            ? PRICES.blobReadOtherPerMillion
            : 0;
  }
  const scale = 1 / Math.max(1, items);
  const tableUSD = tableTransactions * PRICES.tableTransactionPerMillion;
  const tableAsOneUSD = byService.table * PRICES.tableTransactionPerMillion;
  const executionsUSD = executions * PRICES.executionPerMillion;
  return {
    requestsPerItem: {
      blob: perItem(byService.blob),
      queue: perItem(byService.queue),
      table: perItem(byService.table),
      total: perItem(byService.blob + byService.queue + byService.table),
    },
    tableTransactionsPerItem: perItem(tableTransactions),
    executionsPerItem: perItem(executions),
    usdPerMillion: round((storageUSD + tableUSD + executionsUSD) * scale, 4),
    storageUsdPerMillion: round((storageUSD + tableUSD) * scale, 4),
    usdPerMillionBatchAsOne: round((storageUSD + tableAsOneUSD + executionsUSD) * scale, 4),
  };
}

/** Requests by operation (service, method, container/queue/table with the hub's name cut, path, comp). */
export function requestsByOperation(requests: readonly ProxiedRequest[], hub?: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const request of requests) {
    const name = hub === undefined ? request.name : request.name.replace(new RegExp(`^${hub}`, "i"), "{hub}");
    const key = [request.service, request.method, name, request.path, request.comp]
      .filter((part) => part !== "")
      .join(" ");
    counts[key] = (counts[key] ?? 0) + request.transactions;
  }
  return Object.fromEntries(Object.entries(counts).sort((a, b) => b[1] - a[1]));
}

function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
