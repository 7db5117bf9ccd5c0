/**
 * The Durable Task Framework's settings in `bench:peer` (set in ./dotnet/Program.cs, `Cli.Settings`), with why each is
 * the documented choice for a fan-out's throughput; printed into the report.
 */
export const PEER_SETTINGS = {
  extendedSessionsEnabled:
    "true, idle timeout 30 s: the orchestration stays in memory between episodes, no history reload and no replay (Durable Functions' extendedSessionsEnabled, https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-perf-and-scale#extended-sessions)",
  maxQueuePollingInterval:
    "2 s: the longest wait between polls of an empty control or work-item queue, as our host.json's queues maxPollingInterval (Durable Functions' default is 30 s; https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-azure-storage-provider#queue-polling)",
  maxConcurrentTaskActivityWorkItems:
    "10 × processors, Durable Functions' default for maxConcurrentActivityFunctions (https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-perf-and-scale#concurrency-throttles)",
  maxConcurrentTaskOrchestrationWorkItems: "100 (one orchestration runs here)",
  controlQueueBatchSize: "32, the most a queue receive returns",
  partitionManagement:
    "the table partition manager (UseTablePartitionManagement, the newer one; PEER_BLOB_PARTITIONS=1 takes the blob-lease one)",
  fanOut:
    "one orchestration schedules every activity at once and awaits them all (Task.WhenAll), then merges the partials: the fan-out/fan-in pattern (https://learn.microsoft.com/azure/azure-functions/durable/durable-functions-overview#fan-in-out); the batched variant gives each activity a unit of the app's unit size, as the docs advise for large fan-outs",
} as const;
