// The Durable Task Framework peer of `npm run bench:peer` (scripts/verification/bench/peer.ts): the same group-by jobs as
// bench:throughput's scenarios, through DurableTask.Core and its Azure Storage provider, on the benchmark's Azurite.
// Not shipped in the npm package. Modes (argument 1):
//   setup  <connection> <hub> <partitions>                    creates the task hub's queues, tables and containers
//   worker <connection> <hub> <partitions> <counts-file>      runs a TaskHubWorker until its standard input closes,
//                                                             then writes its orchestration episodes and activities
//   run    <connection> <status-connection> <hub> <partitions> <job-file> <per-item|batched> <unit-items> <timeout-s>
//                                                             starts one orchestration, waits, prints one JSON line
using System.Text.Json;
using DurableTask.AzureStorage;
using DurableTask.Core;
using Peer;

return await Cli.Start(args);

namespace Peer
{
    public static class Cli
    {
        public static async Task<int> Start(string[] args)
        {
            try
            {
                return args.FirstOrDefault() switch
                {
                    "setup" when args.Length == 4 => await Setup(args[1], args[2], Partitions(args[3])),
                    "worker" when args.Length == 5 => await Worker(args[1], args[2], Partitions(args[3]), args[4]),
                    "run" when args.Length == 9 => await Run(args),
                    _ => Usage(),
                };
            }
            catch (Exception error)
            {
                Console.Error.WriteLine($"peer: {error}");
                return 1;
            }
        }

        static int Usage()
        {
            Console.Error.WriteLine("usage: Peer setup|worker|run … (see Program.cs)");
            return 2;
        }

        static int Partitions(string text) =>
            int.TryParse(text, out var count) && count is >= 1 and <= 16
                ? count
                : throw new ArgumentException($"partitions must be 1–16, got \"{text}\"");

        /// <summary>
        /// The framework's settings in this benchmark, each the documented choice for a fan-out's throughput (sources in
        /// docs/contributing/benchmark-methods.md): extended sessions (the orchestration stays in memory between episodes: no history reload
        /// and no replay), the queue polling back-off capped at 2 s as our host.json's maxPollingInterval, activity
        /// concurrency 10 per core as Durable Functions' default, the table partition manager (its newer, cheaper one).
        /// </summary>
        public static AzureStorageOrchestrationServiceSettings Settings(string connection, string hub, int partitions) =>
            new()
            {
                StorageAccountClientProvider = new StorageAccountClientProvider(connection),
                TaskHubName = hub,
                PartitionCount = partitions,
                ExtendedSessionsEnabled = true,
                ExtendedSessionIdleTimeout = TimeSpan.FromSeconds(30),
                MaxQueuePollingInterval = TimeSpan.FromSeconds(2),
                MaxConcurrentTaskActivityWorkItems = 10 * Environment.ProcessorCount,
                MaxConcurrentTaskOrchestrationWorkItems = 100,
                ControlQueueBatchSize = 32,
                UseTablePartitionManagement = Environment.GetEnvironmentVariable("PEER_BLOB_PARTITIONS") != "1",
            };

        static async Task<int> Setup(string connection, string hub, int partitions)
        {
            var service = new AzureStorageOrchestrationService(Settings(connection, hub, partitions));
            await service.CreateIfNotExistsAsync();
            Console.WriteLine("{\"ok\":true}");
            return 0;
        }

        static async Task<int> Worker(string connection, string hub, int partitions, string countsFile)
        {
            Jobs.Connection = connection;
            var service = new AzureStorageOrchestrationService(Settings(connection, hub, partitions));
            var worker = new TaskHubWorker(service);
            worker.AddTaskOrchestrations(typeof(FanOutOrchestration));
            worker.AddTaskActivities(typeof(GroupByActivity));
            long episodes = 0;
            long activities = 0;
            // One count per orchestrator episode and per activity: what Durable Functions bills as a function execution.
            worker.AddOrchestrationDispatcherMiddleware(async (_, next) =>
            {
                Interlocked.Increment(ref episodes);
                await next();
            });
            worker.AddActivityDispatcherMiddleware(async (_, next) =>
            {
                Interlocked.Increment(ref activities);
                await next();
            });
            await worker.StartAsync();
            Console.WriteLine("ready");
            await Console.In.ReadToEndAsync();
            await worker.StopAsync(true);
            await File.WriteAllTextAsync(
                countsFile,
                JsonSerializer.Serialize(new { episodes = Interlocked.Read(ref episodes), activities = Interlocked.Read(ref activities) }));
            return 0;
        }

        static async Task<int> Run(string[] args)
        {
            var (connection, statusConnection, hub) = (args[1], args[2], args[3]);
            var partitions = Partitions(args[4]);
            var job = JsonSerializer.Deserialize<JobFile>(await File.ReadAllTextAsync(args[5]), Jobs.Json)
                ?? throw new ArgumentException("the job file is empty");
            var variant = args[6] is "per-item" or "batched" ? args[6] : throw new ArgumentException("variant must be per-item or batched");
            var unitItems = int.TryParse(args[7], out var unit) && unit >= 1 ? unit : throw new ArgumentException("unit items must be ≥ 1");
            var timeout = TimeSpan.FromSeconds(int.Parse(args[8]));
            var input = new FanOutInput
            {
                KeyField = job.KeyField,
                ValueField = job.ValueField,
                InputContainer = job.InputContainer,
                Items = job.Items,
                UnitItems = variant == "per-item" ? 1 : unitItems,
            };
            var service = new AzureStorageOrchestrationService(Settings(connection, hub, partitions));
            // A deployed client checks the task hub once per process, not per job: done here, before the clock starts.
            await service.CreateIfNotExistsAsync();
            var client = new TaskHubClient(service);
            // Waiting polls the Instances table: through a client that is not counted, as bench:throughput's status polls.
            var statusClient = new TaskHubClient(new AzureStorageOrchestrationService(Settings(statusConnection, hub, partitions)));
            var startMs = DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();
            var instance = await client.CreateOrchestrationInstanceAsync(typeof(FanOutOrchestration), input);
            var createdMs = DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();
            var state = await statusClient.WaitForOrchestrationAsync(instance, timeout);
            var completedMs = state?.CompletedTime is { } completed && completed > DateTime.MinValue
                ? new DateTimeOffset(DateTime.SpecifyKind(completed, DateTimeKind.Utc)).ToUnixTimeMilliseconds()
                : (long?)null;
            Console.WriteLine(JsonSerializer.Serialize(new
            {
                status = state?.OrchestrationStatus.ToString() ?? "Timeout",
                startMs,
                createdMs,
                completedMs,
                output = state?.Output,
            }));
            return state?.OrchestrationStatus == OrchestrationStatus.Completed ? 0 : 1;
        }
    }

    public sealed class JobFile
    {
        public string KeyField { get; set; } = "";
        public string ValueField { get; set; } = "";
        public string InputContainer { get; set; } = "";
        public List<Item> Items { get; set; } = [];
    }
}
