import { createHash } from "node:crypto";
import { resolve } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { afterAll, describe, expect, it } from "vitest";
import type { Digest } from "../../examples/blob-digest/digestKind";
import { InstanceProcess, lastOutput, type InstanceState } from "../../dev/src/local/instances";
import type { LogLine } from "../../dev/src/local/protocol";
import { delay } from "../../src/library/util/delay";
import { uniqueName, useAzurite } from "../support/azuriteFixture";

/**
 * The I/O example (examples/blob-digest) end to end (issue 20): its Function app on the local host in 3 OS processes,
 * a job of 1,000 blob items, one worker process SIGKILLed while its units are half done. Its units come back after
 * the host's message lease, and every item's derived blob exists exactly once — named by the item's idempotency key,
 * written only if absent — with the right content; the aggregate counts each item once.
 */

const APP = resolve(__dirname, "..", "..", "examples", "blob-digest", "app.ts");
const ITEMS = 1000;

/** One instance's worker invocations and what its kind logged, from the local host's log lines. */
interface Seen {
  open: Set<string>;
  written: number;
  writtenSinceOpen: number;
}

describe("the blob-digest example on the local host (3 processes, a worker killed mid-unit)", () => {
  const storage = useAzurite();
  const instances: InstanceProcess[] = [];
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop(10_000)));
  });

  it("1,000 blob items complete; each output exists exactly once with the right digest, also after a worker is SIGKILLed mid-unit and its units are redelivered", async () => {
    const blob = BlobServiceClient.fromConnectionString(storage.azurite.connectionString);
    const names = { input: uniqueName("inputs"), output: uniqueName("digests") };
    const inputs = blob.getContainerClient(names.input);
    await inputs.create();
    const texts = Array.from({ length: ITEMS }, (_, i) => `file ${i}\n${"payload ".repeat(1 + (i % 50))}`);
    for (let start = 0; start < ITEMS; start += 50)
      await Promise.all(
        texts
          .slice(start, start + 50)
          .map((text, offset) => inputs.getBlockBlobClient(`in/${start + offset}.txt`).upload(text, text.length)),
      );

    const seen = new Map<string, Seen>();
    const logs: string[] = [];
    const redelivered: string[] = [];
    let victim: { state: InstanceState; process: InstanceProcess } | undefined;
    const killed = Promise.withResolvers<undefined>();
    const onLog = (state: InstanceState, line: LogLine): void => {
      logs.push(`${state.name} ${line.level}: ${line.message}`);
      const mine = seen.get(state.name) ?? { open: new Set<string>(), written: 0, writtenSinceOpen: 0 };
      seen.set(state.name, mine);
      const id = /Functions\.worker.*Id=([\w-]+)/.exec(line.message)?.[1];
      if (id !== undefined && line.message.startsWith("Executing")) {
        mine.open.add(id);
        mine.writtenSinceOpen = 0;
      } else if (id !== undefined && line.message.startsWith("Executed")) mine.open.delete(id);
      else if (line.message.includes("blob-digest: wrote")) {
        mine.written++;
        mine.writtenSinceOpen++;
      } else if (line.message.includes("already written by an earlier delivery")) redelivered.push(line.message);
      // The moment: a worker with units in flight that has written some of their items, and not the leader (its
      // lease would hold the job up a lease duration; the failover is another test's).
      const process = instances.find((instance) => instance.state.name === state.name);
      if (
        victim === undefined &&
        process !== undefined &&
        state.role !== "leader" &&
        mine.open.size > 0 &&
        mine.writtenSinceOpen >= 3
      ) {
        victim = { state, process };
        process.kill();
        killed.resolve(undefined);
      }
    };
    const env = {
      PATH: process.env.PATH,
      COORDINATION_STORAGE: storage.azurite.connectionString,
      AzureWebJobsStorage: storage.azurite.connectionString,
      INPUT_CONTAINER: names.input,
      LOCAL_APP_ENTRY: APP,
      // A killed worker's messages come back after 10 s (the host's lease is 10 min, renewed while a function runs).
      LOCAL_MESSAGE_LEASE_SECONDS: "10",
      COORDINATOR_SCHEDULE: "*/2 * * * * *",
      // A step must end before the next tick: the app refuses a budget as long as the interval.
      STEP_BUDGET_MS: "1500",
    };
    const ready = Array.from({ length: 3 }, () => Promise.withResolvers<InstanceState>());
    for (const [index, started] of ready.entries())
      instances.push(
        new InstanceProcess(`digest-${index + 1}`, env, {
          onReady: (state) => started.resolve(state),
          onEvent: () => undefined,
          onLog,
          onExit: (state) => started.reject(new Error(`${state.name} exited while starting:\n${lastOutput(state)}`)),
        }),
      );
    await Promise.all(ready.map((started) => started.promise));
    /** The HTTP API of an instance still alive (any instance serves it). */
    const api = (): string =>
      `http://127.0.0.1:${instances.find((instance) => instance.alive)?.state.httpPort ?? 0}/api`;

    const submitted = await fetch(`${api()}/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        kind: "blob-digest",
        params: { outputContainer: names.output },
        items: texts.map((_, i) => ({ blob: `in/${i}.txt` })),
      }),
    });
    const answer = (await submitted.json()) as { id: string };
    expect(submitted.status, JSON.stringify(answer)).toBe(202);
    const { id } = answer;

    await killed.promise;
    let status: { status: string; progress?: unknown; aggregate?: unknown } = { status: "pending" };
    for (let poll = 0; poll < 300 && !["completed", "failed"].includes(status.status); poll++) {
      await delay(500);
      status = (await (await fetch(`${api()}/jobs/${id}`)).json()) as typeof status;
    }
    expect(status, logs.slice(-15).join("\n")).toMatchObject({
      status: "completed",
      progress: { total: ITEMS, done: ITEMS, failed: 0 },
      aggregate: { files: ITEMS, bytes: texts.reduce((sum, text) => sum + Buffer.byteLength(text), 0) },
    });
    expect(victim?.process.alive).toBe(false);
    // The killed process had written items of units it never finished: their redelivery found those outputs.
    expect(redelivered.length).toBeGreaterThan(0);

    const outputs = blob.getContainerClient(names.output);
    const listed: string[] = [];
    for await (const item of outputs.listBlobsFlat()) listed.push(item.name);
    expect(listed.sort()).toEqual(texts.map((_, i) => `${id}/${i}.json`).sort());
    for (let start = 0; start < ITEMS; start += 100) {
      const digests = await Promise.all(
        texts.slice(start, start + 100).map(async (_, offset) => {
          const body = await outputs.getBlobClient(`${id}/${start + offset}.json`).downloadToBuffer();
          return JSON.parse(body.toString("utf8")) as Digest;
        }),
      );
      for (const [offset, digest] of digests.entries()) {
        const text = texts[start + offset] ?? "";
        expect(digest).toEqual({
          source: `in/${start + offset}.txt`,
          bytes: Buffer.byteLength(text),
          sha256: createHash("sha256").update(text).digest("hex"),
        });
      }
    }
  }, 300_000);
});
