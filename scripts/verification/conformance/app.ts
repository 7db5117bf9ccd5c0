import { app, output, type InvocationContext, type Timer } from "@azure/functions";

/**
 * The local host's side of `conformance:host`: the same functions as the WebJobs SDK's side (dotnet/Functions.cs),
 * registered through `@azure/functions` as a user's app registers them, run by the local host's instance processes.
 * A work message's body says what to do: "ok-…" succeeds and returns "done:{body}" to OutQueue; "fail-…" throws;
 * "sleep-MS-…" takes MS ms, then succeeds. Each invocation logs `conformance {json}` at its start and end. The
 * scenario disables the functions it does not use (`AzureWebJobs.<name>.Disabled`).
 */

let running = 0;

function report(context: InvocationContext, fields: Record<string, unknown>): void {
  context.log(`conformance ${JSON.stringify({ function: context.functionName, atMs: Date.now(), ...fields })}`);
}

app.storageQueue("Work", {
  queueName: "%WorkQueue%",
  connection: "AzureWebJobsStorage",
  return: output.storageQueue({ queueName: "%OutQueue%", connection: "AzureWebJobsStorage" }),
  handler: async (body: unknown, context: InvocationContext): Promise<string> => {
    running++;
    const metadata = context.triggerMetadata ?? {};
    const id = metadata.id as string | undefined;
    const dequeueCount = metadata.dequeueCount as number | undefined;
    report(context, {
      phase: "start",
      id,
      dequeueCount,
      body,
      running,
      insertionTime: metadata.insertionTime,
      expirationTime: metadata.expirationTime,
    });
    try {
      const text = String(body);
      if (text.startsWith("sleep-")) await new Promise((done) => setTimeout(done, Number(text.split("-")[1])));
      if (text.startsWith("fail-")) throw new Error(`harness failure (${text})`);
      return `done:${text}`;
    } finally {
      running--;
      report(context, { phase: "end", id, dequeueCount });
    }
  },
});

const tickWorkMs = Number(process.env.HARNESS_TICK_WORK_MS ?? "0");

async function onTick(timer: Timer, context: InvocationContext): Promise<void> {
  report(context, {
    phase: "start",
    isPastDue: timer.isPastDue,
    // null when the schedule monitor is off, whatever the library's type says.
    scheduleStatus: timer.scheduleStatus,
  });
  await new Promise((done) => setTimeout(done, tickWorkMs));
  report(context, { phase: "end" });
}

app.timer("Tick", { schedule: "%TimerSchedule%", handler: onTick });
app.timer("TickStartup", { schedule: "%TimerSchedule%", runOnStartup: true, handler: onTick });
