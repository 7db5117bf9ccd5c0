import { resolve } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { FunctionsHost } from "../../dev/src/local/host";
import { loadFunctionApp, type FunctionApp } from "../../dev/src/local/registrations";
import { startCountingProxy, type CountingProxy } from "../../scripts/support/countingProxy";
import { uniqueName, useAzurite } from "../support/azuriteFixture";

/**
 * The host's timer listener lock on the local host: instances of ONE app (same WEBSITE_SITE_NAME) fire a timer on one
 * instance at a time, through a blob lease in host storage (AzureWebJobsStorage); instances of different apps each fire
 * their own. Periods are shortened (lease 15 s — a blob lease's minimum — and recovery polling 500 ms).
 */
describe("timer listener lock (local host on Azurite)", () => {
  const storage = useAzurite();
  let app: FunctionApp;
  const hosts: FunctionsHost[] = [];
  /** Timer invocations per host, by index of creation. */
  const ticks: number[][] = [];

  beforeAll(async () => {
    app = await loadFunctionApp(resolve(__dirname, "fixtures", "timerOnly.ts"));
  });
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((host) => host.stop()));
    ticks.splice(0);
  });

  const proxies: CountingProxy[] = [];
  afterEach(async () => {
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
  });

  const startHost = async (siteName: string, storageConnection?: string, recoveryMs = 500): Promise<number> => {
    const index = hosts.length;
    ticks.push([]);
    const host = new FunctionsHost({
      app,
      log: (entry) => {
        const match = /^tick (\d+)$/.exec(entry.message);
        if (entry.category === "user" && match?.[1] !== undefined) ticks[index]?.push(Number(match[1]));
      },
      env: {
        FIXTURE_SCHEDULE: "*/1 * * * * *",
        AzureWebJobsStorage: storageConnection ?? storage.azurite.connectionString,
        WEBSITE_SITE_NAME: siteName,
      },
      hostJsonPath: resolve(__dirname, "fixtures", "no-host.json"),
      singletonOverrides: { listenerLockPeriodMs: 15_000, listenerLockRecoveryPollingIntervalMs: recoveryMs },
    });
    hosts.push(host);
    await host.start();
    return index;
  };

  it("one app: only one of two instances fires the timer; after the holder stops, the other fires it", async () => {
    const site = uniqueName("one-app");
    await startHost(site);
    await startHost(site);
    await waitFor(() => ticks.flat().length >= 4);
    const firing = ticks.map((list) => list.length > 0);
    expect(
      firing.filter(Boolean),
      `instances that fired: ${JSON.stringify(ticks.map((list) => list.length))}`,
    ).toHaveLength(1);
    const holder = firing.indexOf(true);
    const other = 1 - holder;
    await hosts[holder]?.stop();
    await waitFor(() => (ticks[other]?.length ?? 0) >= 2);
    expect(ticks[other]?.length).toBeGreaterThanOrEqual(2);
  }, 30_000);

  it("different apps: each instance fires its own timer", async () => {
    await startHost(uniqueName("app-a"));
    await startHost(uniqueName("app-b"));
    await waitFor(() => ticks.every((list) => list.length >= 2));
    expect(ticks.map((list) => list.length >= 2)).toEqual([true, true]);
  }, 30_000);

  it("a host that does not hold the lock reads the lease's state at each poll, and tries to acquire only a free lease (no stream of 409s)", async () => {
    const site = uniqueName("polls");
    const holderProxy = await startCountingProxy(storage.azurite);
    const otherProxy = await startCountingProxy(storage.azurite);
    proxies.push(holderProxy, otherProxy);
    await startHost(site, holderProxy.appConnectionString);
    await waitFor(() => (ticks[0]?.length ?? 0) >= 1);
    await startHost(site, otherProxy.appConnectionString);
    await new Promise((done) => setTimeout(done, 4_000));
    const lockRequests = otherProxy
      .between(0, Number.MAX_VALUE)
      .filter((request) => request.target.endsWith(`locks/${site}/Host.Functions.tick.Listener`));
    const reads = lockRequests.filter((request) => request.method === "HEAD");
    const acquires = lockRequests.filter((request) => request.leaseAction === "acquire");
    expect(ticks[1]).toEqual([]);
    expect(reads.length, "lease reads, about one per 500 ms poll").toBeGreaterThanOrEqual(5);
    expect(
      acquires.map((request) => request.status),
      "acquire attempts while the lease was held",
    ).toEqual([]);
  }, 30_000);

  it("a holder that died (its lease never released) is replaced only once the lease has run out", async () => {
    const site = uniqueName("crashed");
    // A dead instance's lock: the blob the host uses, leased for 15 s and never renewed or released.
    const container = BlobServiceClient.fromConnectionString(storage.azurite.connectionString).getContainerClient(
      "azure-webjobs-hosts",
    );
    await container.createIfNotExists();
    const blob = container.getBlockBlobClient(`locks/${site}/Host.Functions.tick.Listener`);
    await blob.upload("", 0);
    await blob.getBlobLeaseClient().acquireLease(15);
    const leasedAtMs = Date.now();
    await startHost(site);
    await waitFor(() => (ticks[0]?.length ?? 0) >= 1, 25_000);
    const firstTickMs = ticks[0]?.[0] ?? 0;
    expect(firstTickMs - leasedAtMs, "fired while the dead holder's lease was still valid").toBeGreaterThanOrEqual(
      14_000,
    );
  }, 40_000);
});

async function waitFor(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`Condition not met within ${timeoutMs} ms.`);
    await new Promise((done) => setTimeout(done, 50));
  }
}
