using System.Globalization;
using System.Text.Json;
using Azure.Storage.Blobs;
using DurableTask.Core;

namespace Peer
{
    /// <summary>An item: inline CSV text, or the name of a blob in the input container holding it.</summary>
    public sealed class Item
    {
        public string? Inline { get; set; }
        public string? Blob { get; set; }
    }

    /// <summary>The orchestration's input: the job, and how many items each activity takes (1: one per item).</summary>
    public sealed class FanOutInput
    {
        public string KeyField { get; set; } = "";
        public string ValueField { get; set; } = "";
        public string InputContainer { get; set; } = "";
        public List<Item> Items { get; set; } = [];
        public int UnitItems { get; set; } = 1;
    }

    public sealed class UnitInput
    {
        public string KeyField { get; set; } = "";
        public string ValueField { get; set; } = "";
        public string InputContainer { get; set; } = "";
        public List<Item> Items { get; set; } = [];
    }

    /// <summary>One group: count, exact sum in millionths, min and max (the project's GroupByPartial tuple).</summary>
    public sealed class Group
    {
        public string Key { get; set; } = "";
        public long Count { get; set; }
        public long SumMicros { get; set; }
        public double Min { get; set; }
        public double Max { get; set; }
    }

    public sealed class GroupStats
    {
        public long count { get; set; }
        public double sum { get; set; }
        public double min { get; set; }
        public double max { get; set; }
    }

    /// <summary>Fan-out/fan-in: one activity per unit of items, all at once; the partials merged as they are awaited.</summary>
    public sealed class FanOutOrchestration : TaskOrchestration<Dictionary<string, GroupStats>, FanOutInput>
    {
        public override async Task<Dictionary<string, GroupStats>> RunTask(OrchestrationContext context, FanOutInput input)
        {
            var tasks = new List<Task<List<Group>>>();
            for (var first = 0; first < input.Items.Count; first += input.UnitItems)
                tasks.Add(context.ScheduleTask<List<Group>>(typeof(GroupByActivity), new UnitInput
                {
                    KeyField = input.KeyField,
                    ValueField = input.ValueField,
                    InputContainer = input.InputContainer,
                    Items = input.Items.GetRange(first, Math.Min(input.UnitItems, input.Items.Count - first)),
                }));
            var partials = await Task.WhenAll(tasks);
            var merged = new SortedDictionary<string, Group>(StringComparer.Ordinal);
            foreach (var partial in partials) GroupBy.MergeInto(merged, partial);
            return merged.Values.ToDictionary(
                group => group.Key,
                group => new GroupStats { count = group.Count, sum = group.SumMicros / 1e6, min = group.Min, max = group.Max });
        }
    }

    /// <summary>The group-by kind's work on a unit: each item's text read (inline or its blob), grouped, merged.</summary>
    public sealed class GroupByActivity : AsyncTaskActivity<UnitInput, List<Group>>
    {
        protected override async Task<List<Group>> ExecuteAsync(TaskContext context, UnitInput input)
        {
            var merged = new SortedDictionary<string, Group>(StringComparer.Ordinal);
            foreach (var item in input.Items)
            {
                var text = item.Inline ?? await Jobs.ReadBlob(input.InputContainer, item.Blob ?? throw new ArgumentException("an item names neither inline text nor a blob"));
                GroupBy.MergeInto(merged, GroupBy.Records(text, input.KeyField, input.ValueField));
            }
            return [.. merged.Values];
        }
    }

    public static class Jobs
    {
        public static readonly JsonSerializerOptions Json = new() { PropertyNameCaseInsensitive = true };
        public static string Connection { get; set; } = "";
        static BlobServiceClient? blobs;

        public static async Task<string> ReadBlob(string container, string name)
        {
            blobs ??= new BlobServiceClient(Connection);
            var content = await blobs.GetBlobContainerClient(container).GetBlobClient(name).DownloadContentAsync();
            return content.Value.Content.ToString();
        }
    }

    /// <summary>
    /// A port of the project's group-by kind (src/groupBy/groupBy.ts with the plain-CSV path of csvRecords.ts, which
    /// the benchmark's items take): CSV with a header row, split on line feeds and commas, fields trimmed, blank lines
    /// skipped, the later column when the header names a field twice; per key the count, the exact sum in millionths,
    /// min and max. Quoted CSV (the library path) is refused rather than read differently.
    /// </summary>
    public static class GroupBy
    {
        public static List<Group> Records(string text, string keyField, string valueField)
        {
            if (text.Contains('"') || text.Contains('\r')) throw new ArgumentException("quoted CSV is not ported");
            var groups = new SortedDictionary<string, Group>(StringComparer.Ordinal);
            string[]? header = null;
            int keyIndex = -1, valueIndex = -1, record = 1, line = 0;
            foreach (var raw in text.Split('\n'))
            {
                line++;
                if (raw.Trim().Length == 0) continue;
                var fields = raw.Split(',');
                if (header == null)
                {
                    header = [.. fields.Select(field => field.Trim())];
                    keyIndex = Array.LastIndexOf(header, keyField);
                    valueIndex = Array.LastIndexOf(header, valueField);
                    continue;
                }
                if (fields.Length != header.Length)
                    throw new ArgumentException($"Invalid Record Length: columns length is {header.Length}, got {fields.Length} on line {line}");
                record++;
                var key = keyIndex < 0 ? null : fields[keyIndex].Trim();
                var valueText = valueIndex < 0 ? "" : fields[valueIndex].Trim();
                if (key == null) throw new ArgumentException($"record {record}: field \"{keyField}\" is missing");
                if (!double.TryParse(valueText, NumberStyles.Float, CultureInfo.InvariantCulture, out var value) || !double.IsFinite(value))
                    throw new ArgumentException($"record {record}: field \"{valueField}\" is not a number");
                if (Math.Abs(value) > 1e12) throw new ArgumentException($"record {record}: value {value} is out of range");
                var micros = checked((long)Math.Floor(value * 1e6 + 0.5));
                if (groups.TryGetValue(key, out var group))
                {
                    group.Count++;
                    group.SumMicros = checked(group.SumMicros + micros);
                    group.Min = Math.Min(group.Min, value);
                    group.Max = Math.Max(group.Max, value);
                }
                else groups[key] = new Group { Key = key, Count = 1, SumMicros = micros, Min = value, Max = value };
            }
            return [.. groups.Values];
        }

        public static void MergeInto(SortedDictionary<string, Group> merged, IEnumerable<Group> partial)
        {
            foreach (var group in partial)
            {
                if (merged.TryGetValue(group.Key, out var current))
                {
                    current.Count += group.Count;
                    current.SumMicros = checked(current.SumMicros + group.SumMicros);
                    current.Min = Math.Min(current.Min, group.Min);
                    current.Max = Math.Max(current.Max, group.Max);
                }
                else merged[group.Key] = new Group { Key = group.Key, Count = group.Count, SumMicros = group.SumMicros, Min = group.Min, Max = group.Max };
            }
        }
    }
}
