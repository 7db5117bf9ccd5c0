#nullable disable
using Azure;
using Azure.Storage.Blobs;
using Microsoft.Azure.WebJobs.Extensions.Timers;
using Newtonsoft.Json;

namespace Conformance;

/// <summary>
/// The shim (the only one): where the timer extension keeps a timer's schedule status, as its StorageScheduleMonitor
/// does — the blob <c>azure-webjobs-hosts/timers/{hostId}/{timerName}/status</c>, JSON with ISO dates, the container
/// created on each update. The extension's own class cannot be used here: version 3.0.6 (the newest on the feed) is
/// built on the old storage SDK and throws TypeLoadException beside Host.Storage 5.x. What is past due, and when a
/// missed occurrence runs, stays the SDK's (<see cref="ScheduleMonitor.CheckPastDueAsync"/>, the TimerListener).
/// </summary>
public sealed class BlobScheduleMonitor : ScheduleMonitor
{
    private readonly BlobContainerClient _container;
    private readonly string _hostId;
    private readonly JsonSerializer _serializer =
        JsonSerializer.Create(new JsonSerializerSettings { DateFormatHandling = DateFormatHandling.IsoDateFormat });

    public BlobScheduleMonitor(string connectionString, string hostId)
    {
        _container = new BlobServiceClient(connectionString).GetBlobContainerClient("azure-webjobs-hosts");
        _hostId = hostId;
    }

    private BlobClient StatusBlob(string timerName) => _container.GetBlobClient($"timers/{_hostId}/{timerName}/status");

    public override async Task<ScheduleStatus> GetStatusAsync(string timerName)
    {
        try
        {
            var content = await StatusBlob(timerName).DownloadContentAsync();
            using var reader = new StringReader(content.Value.Content.ToString());
            return (ScheduleStatus)_serializer.Deserialize(reader, typeof(ScheduleStatus));
        }
        catch (RequestFailedException exception) when (exception.Status == 404)
        {
            return null;
        }
    }

    public override async Task UpdateStatusAsync(string timerName, ScheduleStatus status)
    {
        using var writer = new StringWriter();
        _serializer.Serialize(writer, status);
        try
        {
            await _container.CreateIfNotExistsAsync();
            await StatusBlob(timerName).UploadAsync(BinaryData.FromString(writer.ToString()), overwrite: true);
        }
        catch (Exception exception)
        {
            // Best effort, as the extension's monitor.
            Report.Write(new { kind = "log", atMs = Report.NowMs(), level = "Error", category = "Harness.ScheduleMonitor", message = $"status not updated: {exception.Message}" });
        }
    }
}
