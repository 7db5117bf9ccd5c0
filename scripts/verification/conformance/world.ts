import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import { QueueServiceClient, type QueueClient } from "@azure/storage-queue";
import { startAzurite, type Azurite } from "../../../dev/src/local/azurite";
import { delay } from "../../../src/library/util/delay";
import { startCountingProxy, type CountingProxy, type ProxiedRequest } from "../../support/countingProxy";
import type { HostProcess, Side } from "./hostProcess";
import { startLocalHost } from "./localHost";
import { startSdkHost } from "./sdkHost";
import type { HostSpec } from "./spec";

/**
 * One Azurite for a whole `conformance:host` run, and the hosts of its scenarios: each host process behind a counting
 * proxy of its own (so each request is known to be that process's), storage reached directly for setup and checks.
 */

/** A host and what it sent to storage. */
export interface RunningHost extends HostProcess {
  readonly proxy: CountingProxy;
  /** Every request it made so far. */
  requests(): ProxiedRequest[];
}

export class World {
  readonly queues: QueueServiceClient;
  readonly blobs: BlobServiceClient;
  private readonly hosts: RunningHost[] = [];
  private readonly workDir = mkdtempSync(join(tmpdir(), "conformance-host-"));
  private counter = 0;

  private constructor(
    readonly azurite: Azurite,
    private readonly sdkDll: string,
  ) {
    this.queues = QueueServiceClient.fromConnectionString(azurite.connectionString);
    this.blobs = BlobServiceClient.fromConnectionString(azurite.connectionString);
  }

  static async start(sdkDll: string): Promise<World> {
    return new World(await startAzurite(), sdkDll);
  }

  /** A name unique in this run (queues and host ids: lowercase letters, digits and dashes). */
  unique(prefix: string): string {
    return `${prefix}-${process.pid}-${++this.counter}`;
  }

  /** Starts a host of `side` behind a proxy of its own; resolves once it is ready. */
  async start(side: Side, spec: HostSpec, label = spec.hostId): Promise<RunningHost> {
    const proxy = await startCountingProxy(this.azurite);
    const name = `${side}-${label}-${++this.counter}`;
    const host =
      side === "sdk"
        ? startSdkHost(this.sdkDll, name, spec, proxy.appConnectionString, this.workDir)
        : startLocalHost(name, spec, proxy.appConnectionString, this.workDir);
    const running: RunningHost = Object.assign(host, { proxy, requests: () => proxy.between(0, Number.MAX_VALUE) });
    this.hosts.push(running);
    await host.ready;
    return running;
  }

  /** Stops a host gracefully and closes its proxy. */
  async stop(host: RunningHost): Promise<void> {
    await host.stop();
    await host.proxy.close();
  }

  /** Creates a queue (setup, not counted). */
  async createQueue(name: string): Promise<QueueClient> {
    const queue = this.queues.getQueueClient(name);
    await queue.createIfNotExists();
    return queue;
  }

  /** Stops every host, closes every proxy, stops Azurite. */
  async close(): Promise<void> {
    await Promise.all(this.hosts.map((host) => host.stop(10_000).catch(() => undefined)));
    await Promise.all(this.hosts.map((host) => host.proxy.close().catch(() => undefined)));
    await this.azurite.stop();
    rmSync(this.workDir, { recursive: true, force: true });
  }
}

/** Waits until `condition` holds (checked every 100 ms); false when `timeoutMs` passed first. */
export async function waitUntil(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await delay(100);
  }
}
