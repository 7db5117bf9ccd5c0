using Microsoft.Extensions.Logging;

namespace Conformance;

/// <summary>
/// The SDK's log lines on stdout as JSON: the harness reads "Executed … (Failed …)" as a failed invocation (a binding
/// failure never reaches the function's body), and the listeners' and the singleton's own lines for the record.
/// </summary>
public sealed class JsonLineLoggerProvider : ILoggerProvider
{
    public ILogger CreateLogger(string categoryName) => new JsonLineLogger(categoryName);

    public void Dispose() { }

    private sealed class JsonLineLogger(string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) =>
            logLevel >= LogLevel.Information
            || category.StartsWith("Host.Triggers", StringComparison.Ordinal)
            || category.StartsWith("Host.Singleton", StringComparison.Ordinal);

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception,
            Func<TState, Exception?, string> formatter)
        {
            if (!IsEnabled(logLevel)) return;
            Report.Write(new
            {
                kind = "log",
                atMs = Report.NowMs(),
                level = logLevel.ToString(),
                category,
                message = formatter(state, exception),
                exception = exception?.ToString(),
            });
        }
    }
}
