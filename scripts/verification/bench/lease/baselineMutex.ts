import { RestError, type ContainerClient, type PageBlobClient, type StoragePipelineOptions } from "@azure/storage-blob";
import { delay } from "../../../../src/library/index";

/**
 * The benchmark's baseline: a faithful, minimal TypeScript re-implementation of the Leader Election pattern's C#
 * sample, `BlobDistributedMutex` + `BlobLeaseManager`
 * (https://github.com/mspnp/cloud-design-patterns/tree/main/leader-election, folder DistributedMutex/; described at
 * https://learn.microsoft.com/azure/architecture/patterns/leader-election). What it imitates, on purpose including the
 * weaknesses the project measures itself against:
 * - a 512-byte page blob created (if missing) when the manager is built; a 404 on acquire creates it and retries;
 * - acquire a 15 s lease with a new random lease id per attempt, with no read of the lease before acquiring;
 * - when the lease is taken (409) or the attempt fails in any other way: wait a fixed 20 s, no jitter, then try again;
 * - when acquired: start the leader task and renew at once, then every 10 s measured from the start of the last
 *   renewal;
 * - when the task ends or the caller cancels: cancel renewing, release the lease (no cancellation), and try again at
 *   once;
 * - a renewal that storage refuses ends the term without releasing; no epoch, no fencing, no leader record, no
 *   deadline;
 * - storage client retries as the sample configures them (`Retry.MaxRetries = 3`, `Retry.Delay = 5 s`, exponential).
 */

/**
 * The sample's `BlobSettings` retry options, in the JS SDK's terms (1 try + 3 retries, 5 s base delay, exponential).
 */
export const BASELINE_PIPELINE_OPTIONS: StoragePipelineOptions = {
  retryOptions: { maxTries: 4, retryDelayInMs: 5_000 },
};

/** The sample's constants. */
export const BASELINE_TIMINGS = {
  leaseDurationS: 15,
  renewIntervalMs: 10_000,
  acquireAttemptIntervalMs: 20_000,
} as const;

/** The leader's work; like the sample's `Func<CancellationToken, Task>`, it should stop when `signal` fires. */
export type BaselineTask = (signal: AbortSignal) => Promise<void>;

/** Where the sample would call `Trace.TraceError`. */
export type BaselineTrace = (message: string) => void;

/** `BlobDistributedMutex`: runs a task whenever this instance holds the blob lease. */
export class BaselineMutex {
  private readonly blob: PageBlobClient;

  constructor(
    private readonly container: ContainerClient,
    blobName: string,
    private readonly trace: BaselineTrace = () => undefined,
  ) {
    this.blob = container.getPageBlobClient(blobName);
  }

  /** The `BlobLeaseManager` constructor's `CreateIfNotExists` calls. */
  async createBlob(): Promise<void> {
    await this.container.createIfNotExists();
    await this.blob.createIfNotExists(512);
  }

  /** `RunTaskWhenMutexAcquired`: contends and leads until `abortSignal` fires; a leader releases on the way out. */
  async runTaskWhenMutexAcquired(task: BaselineTask, abortSignal: AbortSignal): Promise<void> {
    while (!abortSignal.aborted) {
      const leaseId = await this.tryAcquireLeaseOrWait(abortSignal);
      if (leaseId === undefined) continue;
      // The sample's linked CancellationTokenSource: cancelled by the caller or when either task completes.
      const leaseController = new AbortController();
      const leaseSignal = AbortSignal.any([abortSignal, leaseController.signal]);
      const leaderTask = task(leaseSignal);
      const renewLeaseTask = this.keepRenewingLease(leaseId, leaseSignal);
      await this.cancelAllWhenAnyCompletes(leaderTask, renewLeaseTask, leaseController);
    }
  }

  private async cancelAllWhenAnyCompletes(
    leaderTask: Promise<void>,
    renewLeaseTask: Promise<void>,
    controller: AbortController,
  ): Promise<void> {
    await Promise.race([leaderTask, renewLeaseTask]).catch(() => undefined);
    controller.abort();
    const results = await Promise.allSettled([leaderTask, renewLeaseTask]);
    for (const result of results) {
      if (result.status === "rejected" && !isAbort(result.reason)) this.trace(describe(result.reason));
    }
  }

  /** Returns the lease id, or waits the fixed acquire interval and returns undefined. */
  private async tryAcquireLeaseOrWait(abortSignal: AbortSignal): Promise<string | undefined> {
    try {
      const leaseId = await this.acquireLease(abortSignal);
      if (leaseId !== undefined) return leaseId;
      await delay(BASELINE_TIMINGS.acquireAttemptIntervalMs, { abortSignal });
      return undefined;
    } catch (error) {
      if (isAbort(error)) return undefined;
      throw error;
    }
  }

  /** `BlobLeaseManager.AcquireLeaseAsync`: undefined on 409 and on any failure other than a missing blob. */
  private async acquireLease(abortSignal: AbortSignal): Promise<string | undefined> {
    let blobNotFound = false;
    try {
      // No proposed id: the SDK proposes a new random one, as `GetBlobLeaseClient()` does in the sample.
      const leaseClient = this.blob.getBlobLeaseClient();
      const lease = await leaseClient.acquireLease(BASELINE_TIMINGS.leaseDurationS, { abortSignal });
      return lease.leaseId ?? leaseClient.leaseId;
    } catch (error) {
      this.trace(describe(error));
      if (!(error instanceof RestError)) return undefined;
      if (error.statusCode === 404) blobNotFound = true;
      if (error.statusCode === 409) return undefined;
    }
    if (blobNotFound) {
      await this.container.createIfNotExists({ abortSignal });
      await this.blob.createIfNotExists(0, { abortSignal });
      return this.acquireLease(abortSignal);
    }
    return undefined;
  }

  /** `KeepRenewingLease`: renews until cancelled (then releases) or until storage refuses a renewal (then returns). */
  private async keepRenewingLease(leaseId: string, signal: AbortSignal): Promise<void> {
    const lease = this.blob.getBlobLeaseClient(leaseId);
    while (!signal.aborted) {
      try {
        const startMs = performance.now();
        try {
          await lease.renewLease({ abortSignal: signal });
        } catch (error) {
          if (!(error instanceof RestError) || isAborted(signal)) throw error;
          this.trace(describe(error));
          return;
        }
        const remainingMs = BASELINE_TIMINGS.renewIntervalMs - (performance.now() - startMs);
        if (remainingMs > 0) await delay(remainingMs, { abortSignal: signal });
      } catch (error) {
        if (!isAbort(error) && !isAborted(signal)) throw error;
        await this.releaseLease(leaseId);
        return;
      }
    }
  }

  /** `BlobLeaseManager.ReleaseLease`: not cancellable; a failure is traced and the lease left to expire. */
  private async releaseLease(leaseId: string): Promise<void> {
    try {
      await this.blob.getBlobLeaseClient(leaseId).releaseLease();
    } catch (error) {
      if (!(error instanceof RestError)) throw error;
      this.trace(describe(error));
    }
  }
}

/** Reads `signal.aborted` afresh (after an await, where type narrowing would assume it unchanged). */
function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && error.name === "AbortError";
}

function describe(error: unknown): string {
  if (error instanceof RestError) return `${error.statusCode ?? "no status"} ${error.code ?? ""}`.trim();
  return error instanceof Error ? error.message : String(error);
}
