import { QueueServiceClient } from "@azure/storage-queue";
import { describe, expect, it } from "vitest";
import { BlobFilesStore } from "../../src/azure/BlobFilesStore";
import { StorageQueue } from "../../src/azure/StorageQueue";
import { uniqueName, useAzurite } from "../support/azuriteFixture";

describe("StorageQueue on Azurite (adapter)", () => {
  const env = useAzurite();
  const newQueue = (): { queue: StorageQueue; raw: ReturnType<QueueServiceClient["getQueueClient"]> } => {
    const raw = QueueServiceClient.fromConnectionString(env.azurite.connectionString).getQueueClient(uniqueName("q"));
    return { queue: new StorageQueue(raw), raw };
  };

  it("creates the queue on first send, stores bodies base64 as the Functions host expects, and decodes them on receive", async () => {
    const { queue, raw } = newQueue();
    expect(await queue.receive(32, 30)).toEqual([]); // a missing queue is simply empty
    await queue.send(['{"v":1,"text":"héllo"}']);
    const peeked = await raw.peekMessages();
    expect(peeked.peekedMessageItems[0]?.messageText).toBe(Buffer.from('{"v":1,"text":"héllo"}').toString("base64"));
    const [message] = await queue.receive(32, 30);
    expect(message).toMatchObject({ text: '{"v":1,"text":"héllo"}', dequeueCount: 1 });
  });

  it("hides received messages for the visibility timeout, deletes them, and treats deleting twice as a no-op", async () => {
    const { queue } = newQueue();
    await queue.send(["a", "b"]);
    const first = await queue.receive(32, 30);
    expect(first).toHaveLength(2);
    expect(await queue.receive(32, 30)).toEqual([]);
    for (const message of first) expect(await queue.delete(message)).toBe(true);
    const [again] = first;
    if (again) expect(await queue.delete(again)).toBe(false);
  });

  it("peeks visible messages, decoded, without hiding them or counting a delivery; a missing queue peeks empty", async () => {
    const { queue, raw } = newQueue();
    expect(await queue.peek(32)).toEqual([]);
    await queue.send(["a"]); // one at a time: a send of several is parallel, in no fixed order
    await queue.send(["b"]);
    const peeked = await queue.peek(32);
    expect(peeked).toMatchObject([
      { text: "a", rawText: Buffer.from("a").toString("base64"), dequeueCount: 0 },
      { text: "b", dequeueCount: 0 },
    ]);
    expect(peeked[0]).not.toHaveProperty("popReceipt");
    expect(await queue.peek(1)).toHaveLength(1);
    expect((await raw.peekMessages({ numberOfMessages: 32 })).peekedMessageItems).toHaveLength(2);
    const received = await queue.receive(32, 30);
    expect(received).toHaveLength(2); // peeking hid nothing
    expect(await queue.peek(32)).toEqual([]);
    // A message received and released shows its delivery: an idle step tells it from one nobody has received yet.
    const [first] = received;
    if (first !== undefined) await queue.release(first);
    expect(await queue.peek(32)).toMatchObject([{ id: first?.id, dequeueCount: 1 }]);
  });

  it("a peek tells how long the message has been on the queue, on storage's clock (the fold lag's source)", async () => {
    const { queue } = newQueue();
    await queue.send(["a"]);
    const [fresh] = await queue.peek(1);
    expect(fresh?.queuedMs).toBeGreaterThanOrEqual(0);
    // Storage's times are whole seconds: wait for the age to tick over rather than for a fixed time.
    let age = fresh?.queuedMs ?? 0;
    for (let attempt = 0; attempt < 50 && age < 1000; attempt++) {
      await new Promise((done) => setTimeout(done, 100));
      age = (await queue.peek(1))[0]?.queuedMs ?? 0;
    }
    expect(age).toBeGreaterThanOrEqual(1000);
  });

  it("sends a message hidden and keeps it hidden with the send's receipt (the sentinel's operations); it surfaces once no longer hidden", async () => {
    const { queue } = newQueue();
    const sent = await queue.sendHidden("sentinel", 2);
    expect(sent.id).not.toBe("");
    expect(await queue.peek(32)).toEqual([]);
    // Hidden again before it surfaces, with the receipt Put Message answered, then with each new one.
    let receipt = sent;
    for (let round = 0; round < 3; round++) {
      // The last hide also rewrites the body (the sentinel's fresh sentAtMs), in the same request.
      const kept = await queue.hide(receipt, 2, round === 2 ? { text: "sentinel, hidden again" } : {});
      if (kept === undefined) throw new Error("expected the sentinel to be ours to hide");
      expect(kept.popReceipt).not.toBe(receipt.popReceipt);
      receipt = kept;
      expect(await queue.peek(32)).toEqual([]);
    }
    // A stale receipt is "not ours any more", not an error.
    expect(await queue.hide(sent, 2)).toBeUndefined();
    // Left alone, it surfaces (wait for the event, at most ~3 s: Azure's visibility is in whole seconds).
    let surfaced: string | undefined;
    for (let attempt = 0; attempt < 60 && surfaced === undefined; attempt++) {
      await new Promise((done) => setTimeout(done, 100));
      surfaced = (await queue.peek(1))[0]?.text;
    }
    expect(surfaced).toBe("sentinel, hidden again");
    // Once someone received it, the sender's receipt can no longer hide or delete it.
    const [taken] = await queue.receive(1, 30);
    expect(taken?.id).toBe(sent.id);
    expect(await queue.hide(receipt, 2)).toBeUndefined();
    expect(await queue.delete(receipt)).toBe(false);
  });

  it("deletes a hidden message with its receipt before anyone received it", async () => {
    const { queue, raw } = newQueue();
    const sent = await queue.sendHidden("sentinel", 30);
    const kept = await queue.hide(sent, 30);
    expect(kept).toBeDefined();
    expect(await queue.delete(kept ?? sent)).toBe(true);
    expect((await raw.getProperties()).approximateMessagesCount).toBe(0);
  });

  it("releases a received message (visible again at once); releasing or deleting with a stale pop receipt answers false", async () => {
    const { queue } = newQueue();
    await queue.send(["a"]);
    const [first] = await queue.receive(32, 30);
    if (first === undefined) throw new Error("expected a message");
    expect(await queue.release(first)).toBe(true);
    expect(await queue.peek(32)).toMatchObject([{ text: "a", dequeueCount: 1 }]);
    const [second] = await queue.receive(32, 30);
    if (second === undefined) throw new Error("expected the released message again");
    expect(second).toMatchObject({ id: first.id, dequeueCount: 2 });
    // The first receipt is stale now: Azure answers 400 PopReceiptMismatch (or 404), which is "not ours any more".
    expect(await queue.release(first)).toBe(false);
    expect(await queue.delete(first)).toBe(false);
    expect(await queue.delete(second)).toBe(true);
    expect(await queue.delete(second)).toBe(false);
    expect(await queue.release(second)).toBe(false);
  });

  it("tells on receive how long a message has been queued, on storage's clock (whole seconds)", async () => {
    const { queue } = newQueue();
    await queue.send(["a"]);
    const [first] = await queue.receive(32, 30);
    expect(first?.queuedMs).toBeGreaterThanOrEqual(0);
    expect(first?.queuedMs).toBeLessThanOrEqual(1000);
    if (first) await queue.release(first);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const [again] = await queue.receive(32, 30);
    expect(again?.queuedMs).toBeGreaterThanOrEqual(2000);
    expect(again?.queuedMs).toBeLessThan(30_000);
  });

  it("reports a body that is not base64 as undecodable, keeping the raw text", async () => {
    const { queue, raw } = newQueue();
    await raw.createIfNotExists();
    await raw.sendMessage("not base64 at all!");
    const [message] = await queue.receive(32, 30);
    expect(message).toMatchObject({ text: undefined, rawText: "not base64 at all!" });
  });

  it("approximateCount counts the messages in the queue, visible or not; a missing queue counts 0", async () => {
    const { queue } = newQueue();
    expect(await queue.approximateCount()).toBe(0);
    await queue.send(["a", "b", "c"]);
    expect(await queue.approximateCount()).toBe(3);
    const [received] = await queue.receive(1, 30);
    expect(await queue.approximateCount()).toBe(3); // invisible, still in the queue
    if (received) await queue.delete(received);
    expect(await queue.approximateCount()).toBe(2);
  });
});

describe("BlobFilesStore on Azurite (adapter)", () => {
  const env = useAzurite();

  it("writes (creating the container), reads, lists by prefix and deletes; a missing blob reads as undefined", async () => {
    const files = new BlobFilesStore(env.blobService().getContainerClient(uniqueName("files")));
    expect(await files.readText("none")).toBeUndefined();
    expect(await files.list("", 10)).toEqual([]);
    await files.writeText("inbox/a", "");
    await files.writeText("inbox/b", "x");
    await files.writeText("jobs/1/spec.json", '{"ü":1}');
    expect(await files.readText("jobs/1/spec.json")).toBe('{"ü":1}');
    expect(await files.list("inbox/", 10)).toEqual(["inbox/a", "inbox/b"]);
    expect(await files.list("inbox/", 1)).toEqual(["inbox/a"]);
    await files.delete("inbox/a");
    await files.delete("inbox/a");
    expect(await files.list("inbox/", 10)).toEqual(["inbox/b"]);
  });

  it("passes the caller's abort through unchanged", async () => {
    const files = new BlobFilesStore(env.blobService().getContainerClient(uniqueName("files")));
    const reason = new Error("stop");
    await expect(files.readText("x", { abortSignal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    await expect(files.createText("x", "", { abortSignal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  it("creates a blob only if none exists (creating the container): of concurrent creators exactly one wins, the blob is its", async () => {
    const files = new BlobFilesStore(env.blobService().getContainerClient(uniqueName("files")));
    expect(await files.createText("idempotency/k", "first")).toBe(true);
    expect(await files.createText("idempotency/k", "second")).toBe(false);
    expect(await files.readText("idempotency/k")).toBe("first");
    const racers = await Promise.all(
      Array.from({ length: 20 }, (_, index) => files.createText("idempotency/race", `racer ${index}`)),
    );
    expect(racers.filter((created) => created)).toHaveLength(1);
    expect(await files.readText("idempotency/race")).toBe(`racer ${racers.indexOf(true)}`);
    // Once deleted, it can be created again.
    await files.delete("idempotency/k");
    expect(await files.createText("idempotency/k", "third")).toBe(true);
  });

  it("opens a blob with its version (ETag): the same content reads the same version, new content another", async () => {
    const files = new BlobFilesStore(env.blobService().getContainerClient(uniqueName("files")));
    await files.writeText("m.ndjson", "a\n");
    const first = await files.open("m.ndjson");
    const again = await files.open("m.ndjson");
    first?.close();
    again?.close();
    expect(first?.etag).toMatch(/./);
    expect(again?.etag).toBe(first?.etag);
    await files.writeText("m.ndjson", "b\n");
    const changed = await files.open("m.ndjson");
    changed?.close();
    expect(changed?.etag).not.toBe(first?.etag);
  });
});
