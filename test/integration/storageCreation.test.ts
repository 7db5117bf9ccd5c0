import { RestError } from "@azure/storage-blob";
import { QueueServiceClient } from "@azure/storage-queue";
import { describe, expect, it } from "vitest";
import { BlobStateStore } from "../../src/azure/BlobStateStore";
import { BlobFilesStore } from "../../src/azure/BlobFilesStore";
import { BlobLeaseStore } from "../../src/azure/BlobLeaseStore";
import { StorageQueue } from "../../src/azure/StorageQueue";
import { uniqueName, useAzurite } from "../support/azuriteFixture";

/** Makes the first call of `create` fail as a storage outage would, then behave normally. */
function failFirstCall<T>(create: () => Promise<T>): () => Promise<T> {
  let calls = 0;
  return () =>
    calls++ === 0
      ? Promise.reject(new RestError("simulated outage", { statusCode: 503, code: "ServerBusy" }))
      : create();
}

describe("creating containers and queues on demand (Azurite)", () => {
  const env = useAzurite();

  it("BlobStateStore retries a container creation that failed instead of caching the failure", async () => {
    const service = env.blobService();
    const name = uniqueName("state");
    const container = service.getContainerClient(name);
    container.createIfNotExists = failFirstCall(container.createIfNotExists.bind(container));
    service.getContainerClient = () => container;
    const store = new BlobStateStore(service, name);
    await expect(store.write("a", 1, 1, { ifNoneMatch: "*" })).rejects.toMatchObject({ name: "StorageError" });
    await store.write("a", 1, 1, { ifNoneMatch: "*" });
    expect(await store.read("a")).toMatchObject({ value: 1, epoch: 1 });
  });

  it("BlobStateStore creates its container again when it was deleted after the first creation", async () => {
    const service = env.blobService();
    const name = uniqueName("state");
    const store = new BlobStateStore(service, name);
    await store.write("a", 1, 1, { ifNoneMatch: "*" });
    await service.getContainerClient(name).delete();
    await store.write("a", 2, 2, { ifNoneMatch: "*" });
    expect(await store.read("a")).toMatchObject({ value: 2, epoch: 2 });
  });

  it("BlobFilesStore retries a container creation that failed, and recreates a deleted container", async () => {
    const container = env.blobService().getContainerClient(uniqueName("files"));
    const create = container.createIfNotExists.bind(container);
    container.createIfNotExists = failFirstCall(create);
    const files = new BlobFilesStore(container);
    await expect(files.writeText("x", "1")).rejects.toMatchObject({ name: "StorageError" });
    await files.writeText("x", "1");
    await container.delete();
    await files.writeText("x", "2");
    expect(await files.readText("x")).toBe("2");
  });

  it("StorageQueue retries a queue creation that failed, and recreates a deleted queue", async () => {
    const client = QueueServiceClient.fromConnectionString(env.azurite.connectionString).getQueueClient(
      uniqueName("q"),
    );
    client.createIfNotExists = failFirstCall(client.createIfNotExists.bind(client));
    const queue = new StorageQueue(client, "none");
    await expect(queue.send(["a"])).rejects.toMatchObject({ name: "StorageError" });
    await queue.send(["a"]);
    await client.delete();
    await queue.send(["b"]);
    expect((await queue.receive(32, 30)).map((message) => message.text)).toEqual(["b"]);
  });

  it("BlobLeaseStore creates its container and blob on acquire, again after they were deleted; a failed creation names itself", async () => {
    const service = env.blobService();
    const name = uniqueName("lease");
    const container = service.getContainerClient(name);
    container.createIfNotExists = failFirstCall(container.createIfNotExists.bind(container));
    service.getContainerClient = () => container;
    const store = new BlobLeaseStore(service, { containerName: name, blobName: "lock" });
    await expect(store.acquire(crypto.randomUUID(), 15)).rejects.toMatchObject({
      name: "StorageError",
      code: "ServerBusy",
      message: expect.stringContaining(`Creating lease blob ${name}/lock`) as unknown,
    });
    expect(await store.acquire(crypto.randomUUID(), 15)).toEqual({ acquired: true });
    await container.delete();
    expect(await store.acquire(crypto.randomUUID(), 15)).toEqual({ acquired: true });
  });
});
