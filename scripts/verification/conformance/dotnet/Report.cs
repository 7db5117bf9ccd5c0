using System.Text.Json;

namespace Conformance;

/// <summary>Writes one JSON object per line on stdout, whole lines only (several threads write).</summary>
public static class Report
{
    private static readonly object Gate = new();

    public static void Write(object line)
    {
        string text = JsonSerializer.Serialize(line);
        lock (Gate)
        {
            Console.Out.Write(text + "\n");
            Console.Out.Flush();
        }
    }

    /// <summary>Unix time in ms.</summary>
    public static long NowMs() => DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();
}
