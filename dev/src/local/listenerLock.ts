import { randomUUID } from "node:crypto";
import type { BlockBlobClient, ContainerClient } from "@azure/storage-blob";
import { createStorageClients, delay, retryAfterCreating } from "azure-leader-coordinator/internal";

/**
 * The host's timer listener lock, emulated. Inside one function app the Functions host runs a timer trigger's
 * listener on ONE instance at a time: the listener is wrapped in a singleton lock, a blob lease in the host storage
 * account (AzureWebJobsStorage) on `azure-webjobs-hosts/locks/{hostId}/{function}.Listener`. The holder renews it at
 * half its period (`singleton.listenerLockPeriod`, default 60 s); the other instances try to take it every
 * `singleton.listenerLockRecoveryPollingInterval` (default 60 s). So when the holder dies, no instance of that app
 * fires the timer until its lease has run out (30–60 s after the last renewal) AND a survivor's next poll comes
 * (0–60 s later). A graceful stop releases the lease, but the others still find out only at their next poll.
 *
 * The host id is the app's: `AzureFunctionsWebHost__hostid` when set, else WEBSITE_SITE_NAME (lowercased, at most
 * 32 characters), as the host derives it; locally, without either, every instance of a run shares "local-app". So
 * instances with the same app name share one lock (one app), and different app names are separate apps.
 */

/** `host.json` `singleton` settings the lock honours, in ms. */
export interface ListenerLockSettings {
  /** Lease duration; renewed at half of it. 15–60 s (a blob lease's limits). @default 60000 */
  listenerLockPeriodMs: number;
  /** How often a non-holder tries to take the lock. @default 60000 */
  listenerLockRecoveryPollingIntervalMs: number;
}

/** The host's defaults (WebJobs SDK `SingletonOptions`). */
export const HOST_LISTENER_LOCK_DEFAULTS: Readonly<ListenerLockSettings> = {
  listenerLockPeriodMs: 60_000,
  listenerLockRecoveryPollingIntervalMs: 60_000,
};

/** Container of the host's locks in the host storage account. */
export const HOST_LOCK_CONTAINER = "azure-webjobs-hosts";
/** Host id when neither AzureFunctionsWebHost__hostid nor WEBSITE_SITE_NAME is set. */
export const DEFAULT_LOCAL_HOST_ID = "local-app";

/** The app's host id, as the host derives it from the app settings. */
export function hostIdFrom(env: Record<string, string | undefined>): string {
  const explicit = env.AzureFunctionsWebHost__hostid?.trim();
  if (explicit !== undefined && explicit !== "") return explicit.toLowerCase();
  const site = env.WEBSITE_SITE_NAME?.trim()
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, "")
    .slice(0, 32)
    .replace(/-+$/, "");
  return site !== undefined && site !== "" ? site : DEFAULT_LOCAL_HOST_ID;
}

/**
 * Validates lock settings (host.json or overrides).
 *
 * @throws Error naming the setting and what is allowed.
 */
export function validateListenerLockSettings(settings: ListenerLockSettings): ListenerLockSettings {
  const { listenerLockPeriodMs: period, listenerLockRecoveryPollingIntervalMs: polling } = settings;
  if (!Number.isFinite(period) || period < 15_000 || period > 60_000) {
    throw new Error(
      `singleton.listenerLockPeriod must be from 15 to 60 seconds (a blob lease's limits), got ${period / 1000} s.`,
    );
  }
  if (!Number.isFinite(polling) || polling < 100)
    throw new Error(`singleton.listenerLockRecoveryPollingInterval must be at least 100 ms, got ${polling} ms.`);
  return settings;
}

/** What a lock reports to the host's log. */
export type LockLog = (level: "information" | "warning", message: string) => void;

/**
 * One listener lock. {@link ListenerLock.hold} runs `listen` while this instance holds the lock, and polls for it
 * while another does; `listen`'s signal fires when the lease is lost (renewal refused or impossible until it would
 * have expired), after which polling starts again. A stop releases the lease.
 */
export class ListenerLock {
  readonly lockId: string;
  private readonly container: ContainerClient;
  private readonly blob: BlockBlobClient;
  private readonly leaseId = randomUUID();

  constructor(
    connectionString: string,
    hostId: string,
    functionName: string,
    private readonly settings: ListenerLockSettings,
    private readonly log: LockLog,
  ) {
    this.lockId = `${hostId}/Host.Functions.${functionName}.Listener`;
    // Built like the app's clients, so a benchmark's request policy counts the lock's requests too.
    this.container = createStorageClients({ kind: "connectionString", connectionString }, {}).blob.getContainerClient(
      HOST_LOCK_CONTAINER,
    );
    this.blob = this.container.getBlockBlobClient(`locks/${this.lockId}`);
  }

  /** Runs `listen` under the lock, again each time the lock is taken back, until `signal` fires; then releases. */
  async hold(signal: AbortSignal, listen: (lost: AbortSignal) => Promise<void>): Promise<void> {
    while (!signal.aborted) {
      if (!(await this.tryAcquire())) {
        if (!(await sleep(this.settings.listenerLockRecoveryPollingIntervalMs, signal))) return;
        continue;
      }
      this.log("information", `Singleton lock acquired (${this.lockId}); the listener starts on this instance.`);
      const lost = new AbortController();
      const stopRenewing = new AbortController();
      const renewing = this.keepRenewed(lost, AbortSignal.any([signal, stopRenewing.signal]));
      try {
        await listen(AbortSignal.any([signal, lost.signal]));
      } finally {
        stopRenewing.abort();
        await renewing;
      }
      if (lost.signal.aborted) {
        this.log(
          "warning",
          `Singleton lock lost (${this.lockId}): ${String(lost.signal.reason)}; the listener stopped and polls for the lock again.`,
        );
        continue;
      }
      await this.release();
      return;
    }
  }

  /**
   * One attempt to take the lease; false when another instance holds it or storage failed (logged). As the host does,
   * it reads the lease's state first and acquires only a lease no one holds: polling a held lock is one read, not a
   * refused acquire (measured on the WebJobs SDK by `npm run conformance:host`, row lock.polling).
   */
  private async tryAcquire(): Promise<boolean> {
    try {
      if ((await this.blob.getProperties()).leaseState === "leased") return false;
    } catch (error) {
      // No blob yet (404): the acquire below creates it.
      if (statusOf(error) !== 404) {
        this.log(
          "warning",
          `Singleton lock ${this.lockId}: read failed (${describeError(error)}); retrying at the next poll.`,
        );
        return false;
      }
    }
    const seconds = this.settings.listenerLockPeriodMs / 1000;
    const acquire = (): Promise<unknown> => this.blob.getBlobLeaseClient(this.leaseId).acquireLease(seconds);
    // No container or blob yet: create them, as the host's lock manager does, and try once more.
    const create = async (): Promise<void> => {
      await this.container.createIfNotExists();
      await this.blob.upload("", 0, { conditions: { ifNoneMatch: "*" } }).catch((error: unknown) => {
        if (statusOf(error) !== 409 && statusOf(error) !== 412) throw error;
      });
    };
    try {
      await retryAfterCreating(acquire, (error) => statusOf(error) === 404, create);
      return true;
    } catch (error) {
      if (statusOf(error) !== 409)
        this.log(
          "warning",
          `Singleton lock ${this.lockId}: acquire failed (${describeError(error)}); retrying at the next poll.`,
        );
      return false;
    }
  }

  /**
   * Renews at half the period, as the host does; after a failed renewal it retries every second. Fires `lost` when
   * storage refuses the lease (another instance took it) or no renewal succeeded before the lease would expire.
   */
  private async keepRenewed(lost: AbortController, stop: AbortSignal): Promise<void> {
    const periodMs = this.settings.listenerLockPeriodMs;
    let renewedAtMs = Date.now();
    let waitMs = periodMs / 2;
    while (await sleep(waitMs, stop)) {
      try {
        await this.blob.getBlobLeaseClient(this.leaseId).renewLease({
          abortSignal: AbortSignal.any([
            stop,
            AbortSignal.timeout(Math.max(1000, renewedAtMs + periodMs - Date.now())),
          ]),
        });
        renewedAtMs = Date.now();
        waitMs = periodMs / 2;
      } catch (error) {
        if (stop.aborted) return;
        const status = statusOf(error);
        if (status === 409 || status === 412 || status === 404 || Date.now() - renewedAtMs >= periodMs) {
          lost.abort(`renewal failed: ${describeError(error)}`);
          return;
        }
        waitMs = 1000;
      }
    }
  }

  private async release(): Promise<void> {
    try {
      await this.blob.getBlobLeaseClient(this.leaseId).releaseLease({ abortSignal: AbortSignal.timeout(5000) });
      this.log("information", `Singleton lock released (${this.lockId}).`);
    } catch (error) {
      this.log(
        "warning",
        `Singleton lock ${this.lockId} not released (${describeError(error)}); it expires by itself.`,
      );
    }
  }
}

/** Sleeps `ms`; false when `signal` fired first. */
async function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await delay(ms, { abortSignal: signal });
    return true;
  } catch {
    return false;
  }
}

/** The HTTP status of a storage error, when storage answered. */
export function statusOf(error: unknown): number | undefined {
  return typeof error === "object" && error !== null && "statusCode" in error && typeof error.statusCode === "number"
    ? error.statusCode
    : undefined;
}

/** The first line of an error's message, for a log line. */
export function describeError(error: unknown): string {
  return error instanceof Error ? (error.message.split("\n")[0] ?? error.name) : String(error);
}
