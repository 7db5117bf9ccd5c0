import { resolve } from "node:path";
import { buffer } from "node:stream/consumers";
import { BlobServiceClient, type BlockBlobClient } from "@azure/storage-blob";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { FunctionsHost } from "../../dev/src/local/host";
import { loadFunctionApp, type FunctionApp } from "../../dev/src/local/registrations";
import { uniqueName, useAzurite } from "../support/azuriteFixture";

/**
 * The timer trigger's schedule as the WebJobs SDK keeps it (measured by `npm run conformance:host`): a schedule that
 * fires at most once a minute is monitored — its status (Last, Next, LastUpdated) kept in host storage at
 * `azure-webjobs-hosts/timers/{hostId}/Host.Functions.{name}/status` — so an occurrence missed while no instance held
 * the listener runs as soon as one does, with isPastDue true; the next occurrence is computed from an invocation's
 * start, so one that outlasted the interval is followed at once.
 */

interface TimerSeen {
  isPastDue: boolean;
  scheduleStatus: { last: string; next: string; lastUpdated: string } | null;
}

interface TimerRecord {
  function: string;
  atMs: number;
  timer: TimerSeen;
}

const MIN_VALUE_MS = Date.parse("0001-01-01T00:00:00Z");
const DAY_MS = 86_400_000;

/** A UTC instant as .NET writes a DateTime in the status blob (`2026-05-01T12:00:00+00:00`). */
function dotnet(ms: number): string {
  return new Date(ms).toISOString().replace(/\.000Z$/, "+00:00");
}

/** The NCRONTAB schedule that fires once a day at the (whole-second) instant `ms`. */
function dailyAt(ms: number): string {
  const at = new Date(ms);
  return `${at.getUTCSeconds()} ${at.getUTCMinutes()} ${at.getUTCHours()} * * *`;
}

describe("timer schedule monitor and occurrences (local host on Azurite)", () => {
  const storage = useAzurite();
  let app: FunctionApp;
  const hosts: FunctionsHost[] = [];
  const records: TimerRecord[] = [];
  const ends: number[] = [];

  beforeAll(async () => {
    app = await loadFunctionApp(resolve(__dirname, "fixtures", "timerStatus.ts"));
  });
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((host) => host.stop()));
    records.splice(0);
    ends.splice(0);
    delete process.env.FIXTURE_TICK_MS;
  });

  const hostsContainer = () =>
    BlobServiceClient.fromConnectionString(storage.azurite.connectionString).getContainerClient("azure-webjobs-hosts");
  const statusBlob = (hostId: string, fn: string): BlockBlobClient =>
    hostsContainer().getBlockBlobClient(`timers/${hostId}/Host.Functions.${fn}/status`);

  const readStatus = async (hostId: string, fn: string): Promise<Record<string, number> | undefined> => {
    const blob = statusBlob(hostId, fn);
    if (!(await blob.exists())) return undefined;
    // One GET (downloadToBuffer reads the size first: a rewrite in between would cut the JSON short).
    const body = (await blob.download()).readableStreamBody;
    const json = JSON.parse(body === undefined ? "{}" : (await buffer(body)).toString("utf8")) as Record<
      string,
      string
    >;
    return {
      last: Date.parse(json.Last ?? ""),
      next: Date.parse(json.Next ?? ""),
      lastUpdated: Date.parse(json.LastUpdated ?? ""),
    };
  };

  const writeStatus = async (
    hostId: string,
    fn: string,
    status: { last: number; next: number; lastUpdated: number },
  ) => {
    const blob = statusBlob(hostId, fn);
    await hostsContainer().createIfNotExists();
    const text = JSON.stringify({
      Last: dotnet(status.last),
      Next: dotnet(status.next),
      LastUpdated: dotnet(status.lastUpdated),
    });
    await blob.upload(text, Buffer.byteLength(text));
  };

  const startHost = async (
    hostId: string,
    env: Record<string, string>,
    recoveryMs = 60_000,
  ): Promise<FunctionsHost> => {
    const host = new FunctionsHost({
      app,
      log: (entry) => {
        if (entry.category !== "user") return;
        if (entry.message.startsWith("timer ")) records.push(JSON.parse(entry.message.slice(6)) as TimerRecord);
        if (entry.message.startsWith("timer-end "))
          ends.push((JSON.parse(entry.message.slice(10)) as TimerRecord).atMs);
      },
      env: {
        AzureWebJobsStorage: storage.azurite.connectionString,
        AzureFunctionsWebHost__hostid: hostId,
        FIXTURE_SCHEDULE: "0 0 0 1 1 *",
        FIXTURE_STARTUP_SCHEDULE: "0 0 0 1 1 *",
        "AzureWebJobs.startupTick.Disabled": "true",
        ...env,
      },
      hostJsonPath: resolve(__dirname, "fixtures", "no-host.json"),
      singletonOverrides: { listenerLockPeriodMs: 15_000, listenerLockRecoveryPollingIntervalMs: recoveryMs },
    });
    hosts.push(host);
    await host.start();
    return host;
  };

  it("runs an occurrence missed while no instance ran as soon as the listener starts: isPastDue true, the missed one as scheduleStatus.next", async () => {
    const hostId = uniqueName("missed");
    const missed = Math.floor((Date.now() - 3_600_000) / 1000) * 1000;
    await writeStatus(hostId, "tick", { last: missed - DAY_MS, next: missed, lastUpdated: missed - DAY_MS });
    const startedMs = Date.now();
    await startHost(hostId, { FIXTURE_SCHEDULE: dailyAt(missed) });
    await waitFor(() => records.length >= 1, 5_000);
    const [first] = records;
    expect(first?.timer.isPastDue).toBe(true);
    expect(Date.parse(first?.timer.scheduleStatus?.next ?? "")).toBe(missed);
    expect(Date.parse(first?.timer.scheduleStatus?.last ?? "")).toBe(missed - DAY_MS);
    expect((first?.atMs ?? 0) - startedMs).toBeLessThan(3_000);
    // Then the status says so: Last the late run, Next tomorrow's occurrence.
    await waitFor(async () => ((await readStatus(hostId, "tick"))?.last ?? 0) > missed);
    const after = await readStatus(hostId, "tick");
    expect(Math.abs((after?.last ?? 0) - (first?.atMs ?? 0))).toBeLessThan(2_000);
    expect(after?.next).toBe(missed + DAY_MS);
  });

  it("writes the status where the host keeps it: Next at the first start, then Last and Next after each invocation; runOnStartup sees the stored status", async () => {
    const hostId = uniqueName("status");
    await startHost(hostId, { "AzureWebJobs.startupTick.Disabled": "false", "AzureWebJobs.tick.Disabled": "true" });
    await waitFor(() => records.length >= 1, 5_000);
    const nextNewYear = Date.UTC(new Date().getUTCFullYear() + 1, 0, 1);
    const [startup] = records;
    expect(startup?.timer.isPastDue).toBe(false);
    // What the SDK hands a first run: Last and LastUpdated never, Next the next occurrence.
    expect(startup?.timer.scheduleStatus).not.toBeNull();
    expect(Date.parse(startup?.timer.scheduleStatus?.last ?? "")).toBe(MIN_VALUE_MS);
    expect(Date.parse(startup?.timer.scheduleStatus?.lastUpdated ?? "")).toBe(MIN_VALUE_MS);
    expect(Date.parse(startup?.timer.scheduleStatus?.next ?? "")).toBe(nextNewYear);
    await waitFor(async () => ((await readStatus(hostId, "startupTick"))?.last ?? MIN_VALUE_MS) !== MIN_VALUE_MS);
    const status = await readStatus(hostId, "startupTick");
    expect(Math.abs((status?.last ?? 0) - (startup?.atMs ?? 0))).toBeLessThan(2_000);
    expect(status?.next).toBe(nextNewYear);
  });

  it("keeps no status for a schedule that fires more than once a minute: scheduleStatus null, no status blob", async () => {
    const hostId = uniqueName("frequent");
    await startHost(hostId, { FIXTURE_SCHEDULE: "*/1 * * * * *" });
    await waitFor(() => records.length >= 2, 5_000);
    expect(records.map((record) => record.timer.scheduleStatus)).toEqual([null, null]);
    expect(await statusBlob(hostId, "tick").exists()).toBe(false);
  });

  it("starts the next invocation as soon as one that outlasted the interval ends: the next occurrence counts from its start", async () => {
    process.env.FIXTURE_TICK_MS = "2500";
    await startHost(uniqueName("overrun"), { FIXTURE_SCHEDULE: "*/2 * * * * *" });
    await waitFor(() => records.length >= 3, 15_000);
    const gapsMs = ends.slice(0, 2).map((endMs, index) => (records[index + 1]?.atMs ?? 0) - endMs);
    expect(
      gapsMs.every((gap) => gap >= 0 && gap < 300),
      `end → next start: ${gapsMs.join(", ")} ms`,
    ).toBe(true);
  }, 30_000);

  it("a dead holder's missed occurrence runs as soon as a survivor takes its lock, with isPastDue true", async () => {
    const hostId = uniqueName("failover");
    const due = Math.ceil((Date.now() + 4_000) / 1000) * 1000;
    await writeStatus(hostId, "tick", { last: due - DAY_MS, next: due, lastUpdated: due - DAY_MS });
    // The dead holder's listener lock: leased for 15 s, never renewed or released.
    const lock = hostsContainer().getBlockBlobClient(`locks/${hostId}/Host.Functions.tick.Listener`);
    await lock.upload("", 0);
    await lock.getBlobLeaseClient().acquireLease(15);
    const leasedAtMs = Date.now();
    await startHost(hostId, { FIXTURE_SCHEDULE: dailyAt(due) }, 500);
    await waitFor(() => records.length >= 1, 25_000);
    const [late] = records;
    expect(
      (late?.atMs ?? 0) - leasedAtMs,
      "fired while the dead holder's lease was still valid",
    ).toBeGreaterThanOrEqual(14_000);
    expect(late?.timer.isPastDue).toBe(true);
    expect(Date.parse(late?.timer.scheduleStatus?.next ?? "")).toBe(due);
  }, 40_000);
});

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms.`);
    await new Promise((done) => setTimeout(done, 50));
  }
}
