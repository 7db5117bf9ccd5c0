// The real WebJobs SDK's queue and timer triggers, run as one host process of a conformance scenario
// (scripts/verification/conformance.ts). Usage: ConformanceHost <settings.json>. The settings file is a flat JSON
// object of strings: the app settings the functions' %references% resolve from (WorkQueue, OutQueue, TimerSchedule,
// AzureWebJobsStorage, Harness.<Function>.Disabled) and the Harness:* options below. Every line on stdout is one JSON
// object (Report.cs); the process stops gracefully when its stdin closes.
using System.Text.Json;
using Azure.Storage.Queues;
using Conformance;
using Microsoft.Azure.WebJobs;
using Microsoft.Azure.WebJobs.Extensions.Timers;
using Microsoft.Azure.WebJobs.Host;
using Microsoft.Extensions.Configuration;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

var settings = JsonSerializer.Deserialize<Dictionary<string, string>>(File.ReadAllText(args[0]))
    ?? throw new InvalidOperationException($"{args[0]} holds no settings");
string Setting(string name, string fallback) => settings.TryGetValue(name, out var value) ? value : fallback;
string hostId = Setting("Harness:HostId", "conformance");

Report.Write(new { kind = "starting", pid = Environment.ProcessId, processorCount = Environment.ProcessorCount });

var builder = new HostBuilder()
    .ConfigureAppConfiguration(config => config.AddInMemoryCollection(settings!))
    .ConfigureWebJobs(webJobs =>
    {
        webJobs.UseHostId(hostId);
        webJobs.AddAzureStorageCoreServices();
        webJobs.AddAzureStorageQueues(queues =>
        {
            queues.BatchSize = int.Parse(Setting("Harness:BatchSize", "16"));
            // Left unset, the extension computes its own default (batchSize / 2, times the processor count unless
            // WEBSITE_SKU is Dynamic): that default is one of the rows.
            if (settings.TryGetValue("Harness:NewBatchThreshold", out var threshold))
                queues.NewBatchThreshold = int.Parse(threshold);
            queues.MaxDequeueCount = int.Parse(Setting("Harness:MaxDequeueCount", "5"));
            queues.VisibilityTimeout = TimeSpan.FromMilliseconds(double.Parse(Setting("Harness:VisibilityTimeoutMs", "0")));
            queues.MaxPollingInterval = TimeSpan.FromMilliseconds(double.Parse(Setting("Harness:MaxPollingIntervalMs", "60000")));
            queues.MessageEncoding = QueueMessageEncoding.Base64;
        });
        webJobs.AddTimers();
    })
    .ConfigureServices(services =>
    {
        services.Configure<SingletonOptions>(singleton =>
        {
            singleton.ListenerLockPeriod = TimeSpan.FromSeconds(double.Parse(Setting("Harness:ListenerLockPeriodS", "60")));
            singleton.ListenerLockRecoveryPollingInterval =
                TimeSpan.FromSeconds(double.Parse(Setting("Harness:ListenerLockRecoveryS", "60")));
        });
        // The shim: Microsoft.Azure.WebJobs.Extensions 3.0.6's StorageScheduleMonitor is built on the old storage SDK
        // and fails to load beside Host.Storage 5.x (TypeLoadException); this one keeps the status blob where it does.
        services.AddSingleton<ScheduleMonitor>(_ => new BlobScheduleMonitor(Setting("AzureWebJobsStorage", ""), hostId));
    })
    .ConfigureLogging(logging =>
    {
        logging.ClearProviders();
        logging.SetMinimumLevel(LogLevel.Debug);
        logging.AddProvider(new JsonLineLoggerProvider());
    });

Host.Functions.TickWorkMs = int.Parse(Setting("Harness:TickWorkMs", "0"));
using var host = builder.Build();
await host.StartAsync();
Report.Write(new { kind = "ready", pid = Environment.ProcessId });
// Runs until the harness closes stdin (a graceful stop) or kills the process (a crash).
await Task.Run(() =>
{
    while (Console.In.Read() != -1) { }
});
await host.StopAsync();
Report.Write(new { kind = "stopped" });
return 0;
