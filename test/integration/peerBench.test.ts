import { BlobServiceClient } from "@azure/storage-blob";
import { QueueServiceClient } from "@azure/storage-queue";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePeerArgs, UsageError } from "../../scripts/verification/bench/peer/cli";
import { batchParts, startCountingProxy, type CountingProxy } from "../../scripts/support/countingProxy";
import { priceRun } from "../../scripts/verification/bench/peer/pricing";
import { statusPoller } from "../../scripts/verification/bench/throughput/projectRun";
import { getJobStatus } from "../../src/app/jobs";
import { instanceEnv } from "../../dev/src/local/startup";
import { checkTargets, summarize, type PeerSample } from "../../scripts/verification/bench/peer/report";
import { uniqueName, useAzurite } from "../support/azuriteFixture";
import { proxiedRequest } from "../support/proxiedRequest";

/** bench:peer's parts that its figures rest on: the counting proxy (on a real Azurite), the pricing, the targets. */

const request = proxiedRequest;

describe("bench:peer's counting proxy (Azurite)", () => {
  const env = useAzurite();
  let proxy: CountingProxy;
  beforeAll(async () => {
    proxy = await startCountingProxy(env.azurite);
  });
  afterAll(async () => {
    await proxy.close();
  });

  it("passes blob and queue requests through to Azurite and counts each once, by service and operation", async () => {
    const from = Date.now();
    const container = BlobServiceClient.fromConnectionString(proxy.appConnectionString).getContainerClient(
      uniqueName("peer"),
    );
    await container.create();
    await container.getBlockBlobClient("a.csv").upload("k,v\n", 4);
    const queue = QueueServiceClient.fromConnectionString(proxy.appConnectionString).getQueueClient(uniqueName("peer"));
    await queue.create();
    await queue.sendMessage("hello");
    const received = await queue.receiveMessages();
    expect(received.receivedMessageItems[0]?.messageText).toBe("hello");
    const counted = proxy.between(from, Date.now() + 1);
    expect(counted.map((r) => `${r.service} ${r.method} ${r.path} ${r.status}`).sort()).toEqual([
      "blob PUT  201",
      "blob PUT a.csv 201",
      "queue GET messages 200",
      "queue POST messages 201",
      "queue PUT  201",
    ]);
  });

  it("records what the conformance rows compare: visibility timeouts, time-to-live, received messages, lease calls", async () => {
    const from = Date.now();
    const queue = QueueServiceClient.fromConnectionString(proxy.appConnectionString).getQueueClient(uniqueName("peer"));
    await queue.create();
    const sent = await queue.sendMessage("a", { messageTimeToLive: -1 });
    await queue.sendMessage("b");
    const received = await queue.receiveMessages({ numberOfMessages: 2, visibilityTimeout: 600 });
    await queue.peekMessages();
    const container = BlobServiceClient.fromConnectionString(proxy.appConnectionString).getContainerClient(
      uniqueName("peer"),
    );
    await container.create();
    const blob = container.getBlockBlobClient("locks/host-1/Host.Functions.Tick.Listener");
    await blob.upload("", 0);
    await blob.getBlobLeaseClient().acquireLease(15);
    const counted = proxy.between(from, Date.now() + 1);
    const sends = counted.filter((r) => r.service === "queue" && r.method === "POST");
    expect(sends.map((r) => r.messageTtlS)).toEqual([-1, undefined]);
    const receives = counted.filter((r) => r.received !== undefined);
    expect(receives).toHaveLength(1);
    expect(receives[0]?.visibilityTimeoutS).toBe(600);
    expect(receives[0]?.received?.map((message) => message.dequeueCount)).toEqual([1, 1]);
    expect(receives[0]?.received?.map((message) => message.id).sort()).toEqual(
      received.receivedMessageItems.map((message) => message.messageId).sort(),
    );
    expect(receives[0]?.received?.map((message) => message.id)).toContain(sent.messageId);
    const lease = counted.find((r) => r.leaseAction !== undefined);
    expect(lease).toMatchObject({
      leaseAction: "acquire",
      leaseDurationS: 15,
      target: `${container.containerName}/locks/host-1/Host.Functions.Tick.Listener`,
    });
  });

  it("counts a table batch per entity operation it carries, through the table endpoint", async () => {
    const from = Date.now();
    const tableEndpoint = /TableEndpoint=([^;]+)/.exec(proxy.connectionString)?.[1];
    expect(tableEndpoint).toBeDefined();
    const part =
      "--changeset\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\nPOST x HTTP/1.1\r\n\r\n";
    // Unsigned, so Azurite refuses it: what is counted is what was sent.
    const answer = await fetch(`${tableEndpoint ?? ""}/$batch`, {
      method: "POST",
      headers: { "content-type": "multipart/mixed; boundary=batch" },
      body: `--batch\r\n${part}${part}${part}--changeset--\r\n--batch--\r\n`,
    });
    expect(answer.status).toBeGreaterThanOrEqual(400);
    const counted = proxy.between(from, Date.now() + 1).filter((r) => r.service === "table");
    expect(counted).toHaveLength(1);
    expect(counted[0]?.transactions).toBe(3);
    expect(batchParts("no parts")).toBe(1);
  });

  it("does not count the benchmark's own status polls: the poller reaches Azurite directly", async () => {
    const { env: instance } = instanceEnv({}, proxy.appConnectionString, "0 */5 * * * *");
    const poller = statusPoller(instance, env.azurite.connectionString);
    const from = Date.now();
    // Each poll reads the job's state document, then its spec (a running job's: its cancel marker).
    expect(await getJobStatus(poller, "0123456789abcdef0123456789abcdef")).toBeUndefined();
    expect(await getJobStatus(poller, "0123456789abcdef0123456789abcdef")).toBeUndefined();
    expect(proxy.between(from, Date.now() + 1)).toEqual([]);
  });
});

describe("bench:peer's pricing and targets", () => {
  it("prices table transactions per entity and blob, queue and executions at the shared list prices", () => {
    const price = priceRun(
      [
        request("queue"),
        request("queue"),
        request("blob", { method: "PUT" }),
        request("blob", { method: "DELETE" }),
        request("table", { method: "POST", transactions: 10 }),
      ],
      2,
      1,
    );
    expect(price.requestsPerItem).toEqual({ blob: 2, queue: 2, table: 1, total: 5 });
    expect(price.tableTransactionsPerItem).toBe(10);
    // 2 × $0.40 + $5.50 + 0 + 10 × $0.036 + 2 × $0.40 per million
    expect(price.usdPerMillion).toBeCloseTo(7.46, 4);
    expect(price.usdPerMillionBatchAsOne).toBeCloseTo(7.136, 4);
  });

  const sample = (itemsPerS: number, requests: number, completionS: number): PeerSample => ({
    round: 1,
    order: 1,
    ok: true,
    items: 100,
    completionS,
    itemsPerS,
    price: { ...priceRun([], 0, 100), requestsPerItem: { blob: 0, queue: requests, table: 0, total: requests } },
    executions: {},
    peakMemoryMiB: undefined,
    cpuS: undefined,
    loadAverage1m: [0, 0],
    requests: {},
  });

  it("judges each target against the framework's best variant on that count", () => {
    const project = summarize([sample(300, 0.02, 1)]);
    const scenario = {
      project,
      durableTask: { batched: summarize([sample(100, 0.1, 2)]), perItem: summarize([sample(10, 5, 0.5)]) },
    };
    const [rate, requests, , completion] = checkTargets(scenario, scenario);
    expect(rate).toMatchObject({ peerBestVariant: "batched", ratio: 3, met: true });
    expect(requests).toMatchObject({ peerBestVariant: "batched", ratio: 0.2, met: true });
    expect(completion).toMatchObject({ peerBestVariant: "perItem", ratio: 2, met: false });
  });

  it("refuses a partition count the framework does not allow, saying what is", () => {
    expect(() => parsePeerArgs(["--partitions", "17"])).toThrow(UsageError);
    expect(() => parsePeerArgs(["--partitions", "17"])).toThrow("--partitions must be a whole number from 1 to 16");
    expect(parsePeerArgs([]).partitions).toBe(4);
    expect(parsePeerArgs([]).projectOnly).toBe(false);
    expect(parsePeerArgs(["--project-only"]).projectOnly).toBe(true);
  });
});
