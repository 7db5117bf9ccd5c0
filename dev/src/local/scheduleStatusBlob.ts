import { buffer } from "node:stream/consumers";
import type { BlockBlobClient, ContainerClient } from "@azure/storage-blob";
import { createStorageClients } from "azure-leader-coordinator/internal";
import { describeError, HOST_LOCK_CONTAINER, statusOf, type LockLog } from "./listenerLock.js";
import { parseStatusJson, statusJson, type ScheduleStatus } from "./scheduleMonitor.js";

/**
 * Where a monitored timer's schedule status lives, as the timer extension's StorageScheduleMonitor keeps it: the blob
 * `azure-webjobs-hosts/timers/{hostId}/Host.Functions.{function}/status` in host storage (AzureWebJobsStorage), JSON
 * `{ "Last", "Next", "LastUpdated" }`. Read with one GET when the listener starts; written after each invocation (and
 * at a first start) with the container created first, as the extension does — the same requests the WebJobs SDK
 * makes (`npm run conformance:host`, row timer.status-blob). The host id and function name are the listener lock's.
 */
export class ScheduleStatusBlob {
  private readonly container: ContainerClient;
  private readonly blob: BlockBlobClient;

  constructor(
    connectionString: string,
    hostId: string,
    functionName: string,
    private readonly log: LockLog,
  ) {
    // Built like the app's clients, so a benchmark's request policy counts these requests too.
    this.container = createStorageClients({ kind: "connectionString", connectionString }, {}).blob.getContainerClient(
      HOST_LOCK_CONTAINER,
    );
    this.blob = this.container.getBlockBlobClient(`timers/${hostId}/Host.Functions.${functionName}/status`);
  }

  /** The stored status; undefined when there is none (or it cannot be read: the listener then starts afresh). */
  async read(options: { abortSignal?: AbortSignal } = {}): Promise<ScheduleStatus | undefined> {
    try {
      const response = await this.blob.download(0, undefined, { abortSignal: options.abortSignal });
      const body = response.readableStreamBody;
      const status = body === undefined ? undefined : parseStatusJson((await buffer(body)).toString("utf8"));
      if (status === undefined)
        this.log("warning", `Timer status ${this.blob.name} is not a schedule status; ignored.`);
      return status;
    } catch (error) {
      if (statusOf(error) !== 404 && options.abortSignal?.aborted !== true)
        this.log(
          "warning",
          `Timer status ${this.blob.name} could not be read (${describeError(error)}); starting afresh.`,
        );
      return undefined;
    }
  }

  /** Stores `status`; best effort, as in the host (a failure is logged, the timer keeps running). */
  async write(status: ScheduleStatus, options: { abortSignal?: AbortSignal } = {}): Promise<void> {
    const text = JSON.stringify(statusJson(status));
    try {
      await this.container.createIfNotExists({ abortSignal: options.abortSignal });
      await this.blob.upload(text, Buffer.byteLength(text), { abortSignal: options.abortSignal });
    } catch (error) {
      if (options.abortSignal?.aborted !== true)
        this.log("warning", `Timer status ${this.blob.name} could not be written (${describeError(error)}).`);
    }
  }
}
