using Conformance;
using Microsoft.Azure.WebJobs;

// Namespace and class as the Functions host names a function's method (Host.Functions.<name>), so that the listener
// lock (locks/{hostId}/Host.Functions.Tick.Listener) and the schedule status (timers/{hostId}/Host.Functions.Tick/status)
// are the blobs the Functions host would use for a function named Tick.
namespace Host;

/// <summary>
/// The scenario functions, the same as the local host's side (scripts/verification/conformance/app.ts). A work
/// message's body says what to do: "ok-…" succeeds and returns "done:{body}" to OutQueue; "fail-…" throws; "sleep-MS-…"
/// takes MS ms, then succeeds. Each invocation reports its start and end. Disabled unless the scenario enables it
/// (Harness.{name}.Disabled = "false").
/// </summary>
public static class Functions
{
    private static int _running;

    /// <summary>How long each timer invocation takes, ms (Harness:TickWorkMs).</summary>
    public static int TickWorkMs { get; set; }

    [Disable("Harness.Work.Disabled")]
    [return: Queue("%OutQueue%")]
    public static async Task<string> Work(
        [QueueTrigger("%WorkQueue%")] string body,
        long dequeueCount,
        string id,
        DateTimeOffset insertionTime,
        DateTimeOffset expirationTime)
    {
        int running = Interlocked.Increment(ref _running);
        Report.Write(new { kind = "invocation", function = "Work", phase = "start", atMs = Report.NowMs(), id, dequeueCount, body, running, insertionTime, expirationTime });
        try
        {
            if (body.StartsWith("sleep-", StringComparison.Ordinal))
                await Task.Delay(int.Parse(body.Split('-')[1]));
            if (body.StartsWith("fail-", StringComparison.Ordinal))
                throw new InvalidOperationException($"harness failure ({body})");
            return $"done:{body}";
        }
        finally
        {
            Interlocked.Decrement(ref _running);
            Report.Write(new { kind = "invocation", function = "Work", phase = "end", atMs = Report.NowMs(), id, dequeueCount });
        }
    }

    [Disable("Harness.Tick.Disabled")]
    public static Task Tick([TimerTrigger("%TimerSchedule%")] TimerInfo timer) => OnTick("Tick", timer);

    [Disable("Harness.TickStartup.Disabled")]
    public static Task TickStartup([TimerTrigger("%TimerSchedule%", RunOnStartup = true)] TimerInfo timer) =>
        OnTick("TickStartup", timer);

    private static async Task OnTick(string name, TimerInfo timer)
    {
        var status = timer.ScheduleStatus;
        Report.Write(new
        {
            kind = "invocation",
            function = name,
            phase = "start",
            atMs = Report.NowMs(),
            isPastDue = timer.IsPastDue,
            scheduleStatus = status == null ? null : new
            {
                last = status.Last.ToString("o"),
                next = status.Next.ToString("o"),
                lastUpdated = status.LastUpdated.ToString("o"),
            },
        });
        await Task.Delay(TickWorkMs);
        Report.Write(new { kind = "invocation", function = name, phase = "end", atMs = Report.NowMs() });
    }
}
