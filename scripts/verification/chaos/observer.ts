import type { ContainerClient } from "@azure/storage-blob";
import { delay } from "../../../src/library/util/delay";

/**
 * The state observer: an outside witness of the stored state, independent of what the leaders log about themselves.
 * Every ~150 ms it lists the state container (one request, with metadata) and records each new version of each blob
 * — a changed ETag — with the epoch in its metadata and, for job states, the `lastEpoch`, status and counts in its
 * body. A version that lives less than one poll can be missed; every version it does see is real.
 */

/** One observed version of a state blob. */
export interface StateVersion {
  key: string;
  etag: string;
  /** Epoch in the blob's metadata (written by the fenced store with every write). */
  epoch: number;
  /** When the observer first saw this version (wall-clock ms). */
  observedAtMs: number;
  /** For job states: the body's `lastEpoch`, status and counts. */
  job?: { lastEpoch: number; status: string; doneCount: number; failedCount: number };
}

/** Polls a state container and keeps every version it sees. */
export class StateObserver {
  /** Every version seen, in the order seen. */
  readonly versions: StateVersion[] = [];
  /** Polls that failed (during an outage, say); not an error in itself. */
  failedPolls = 0;
  private readonly latest = new Map<string, string>();
  private readonly controller = new AbortController();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly container: ContainerClient,
    private readonly intervalMs = 150,
  ) {}

  /** Starts polling. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Takes one last look and stops. */
  async stop(): Promise<void> {
    this.controller.abort();
    await this.loop;
    await this.poll().catch(() => undefined);
  }

  /** Versions of one key, in the order seen. */
  versionsOf(key: string): StateVersion[] {
    return this.versions.filter((version) => version.key === key);
  }

  private async run(): Promise<void> {
    while (!this.controller.signal.aborted) {
      await this.poll().catch(() => {
        this.failedPolls++;
      });
      await delay(this.intervalMs, { abortSignal: this.controller.signal }).catch(() => undefined);
    }
  }

  private async poll(): Promise<void> {
    const observedAtMs = Date.now();
    for await (const blob of this.container.listBlobsFlat({ includeMetadata: true })) {
      const etag = blob.properties.etag;
      if (this.latest.get(blob.name) === etag) continue;
      this.latest.set(blob.name, etag);
      const version: StateVersion = { key: blob.name, etag, epoch: Number(blob.metadata?.epoch ?? 0), observedAtMs };
      if (/^jobs\/[^/]+\.json$/.test(blob.name)) version.job = await this.readJob(blob.name, etag);
      this.versions.push(version);
    }
  }

  /** The job fields of the version with `etag` (undefined when it changed again before the read). */
  private async readJob(key: string, etag: string): Promise<StateVersion["job"]> {
    try {
      const body = await this.container
        .getBlockBlobClient(key)
        .downloadToBuffer(0, undefined, { conditions: { ifMatch: etag } });
      const value = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
      const number = (field: string): number => (typeof value[field] === "number" ? value[field] : Number.NaN);
      return {
        lastEpoch: number("lastEpoch"),
        status: String(value.status),
        doneCount: number("doneCount"),
        failedCount: number("failedCount"),
      };
    } catch {
      return undefined;
    }
  }
}
