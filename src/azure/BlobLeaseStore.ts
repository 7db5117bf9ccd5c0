import { randomUUID } from "node:crypto";
import type { BlobClient, BlobServiceClient, ContainerClient } from "@azure/storage-blob";
import {
  AZURE_CONTAINER_OR_QUEUE_NAME,
  AZURE_CONTAINER_OR_QUEUE_NAME_RULE,
  BLOB_DOT_SEGMENT_RULE,
  blobIn,
  hasDotSegment,
} from "./azureNames.js";
import { ConfigurationError, LeadershipLostError } from "../library/errors.js";
import { storageFailure, toLibraryError } from "./storageErrors.js";
import { retryAfterCreating } from "./OnDemandCreation.js";
import {
  EMPTY_RECORD,
  type AcquireResult,
  type BreakOutcome,
  type LeaderRecord,
  type LeaseSnapshot,
  type HonourOptions,
  type LeaseStore,
  type Revocation,
} from "../library/lease/LeaseStore.js";
import type { Abortable } from "../library/util/delay.js";
import { parseRecord, parseRevocation, recordMetadata, REVOCATION_META } from "./leaseMetadata.js";

/** Options for {@link BlobLeaseStore}. */
export interface BlobLeaseStoreOptions {
  /** Container of the lease blob. @default "leases" */
  containerName?: string;
  /** The lease blob. @default "MyLeaderCoordinatorTask" */
  blobName?: string;
}

/**
 * The lease port on Azure Blob Storage: the leader record lives in the lease blob's metadata (writable only with the
 * lease id), and revocation requests in a sibling blob `<blob>.revocation` (writable by anyone with access).
 */
export class BlobLeaseStore implements LeaseStore {
  /** {@inheritDoc LeaseStore.name} */
  readonly name: string;
  private readonly container: ContainerClient;
  private readonly blob: BlobClient;
  private readonly revocationBlob: BlobClient;

  /** A lease on a blob of `service` (the container and blob named by `options`, created when missing). */
  constructor(service: BlobServiceClient, options: BlobLeaseStoreOptions = {}) {
    const containerName = options.containerName ?? "leases";
    const blobName = options.blobName ?? "MyLeaderCoordinatorTask";
    if (!AZURE_CONTAINER_OR_QUEUE_NAME.test(containerName)) {
      throw new ConfigurationError(
        `containerName ${JSON.stringify(containerName)} is not a valid Azure container name: use ${AZURE_CONTAINER_OR_QUEUE_NAME_RULE}.`,
      );
    }
    if (blobName.length < 1 || blobName.length > 1000 || /[./]$/.test(blobName) || hasDotSegment(blobName)) {
      throw new ConfigurationError(
        `blobName ${JSON.stringify(blobName)} is not a valid lease blob name: use 1–1000 characters, not ending in '.' or '/'; ${BLOB_DOT_SEGMENT_RULE}.`,
      );
    }
    this.name = `${containerName}/${blobName}`;
    this.container = service.getContainerClient(containerName);
    this.blob = blobIn(this.container, blobName);
    this.revocationBlob = blobIn(this.container, `${blobName}.revocation`);
  }

  /** {@inheritDoc LeaseStore.ensureExists} */
  async ensureExists(options: Abortable = {}): Promise<void> {
    const { abortSignal } = options;
    try {
      await this.container.createIfNotExists({ abortSignal });
      await this.blob.getBlockBlobClient().upload("", 0, { conditions: { ifNoneMatch: "*" }, abortSignal });
    } catch (error) {
      // 409 BlobAlreadyExists: another instance created it first; 412 LeaseIdMissing: it exists and is leased.
      const { statusCode } = storageFailure(error);
      if (statusCode === 409 || statusCode === 412) return;
      throw toLibraryError(error, `Creating lease blob ${this.name}`, abortSignal);
    }
  }

  /** {@inheritDoc LeaseStore.acquire} */
  async acquire(leaseId: string, durationS: number, options: Abortable = {}): Promise<AcquireResult> {
    const { abortSignal } = options;
    const acquire = (): Promise<unknown> =>
      this.blob.getBlobLeaseClient(leaseId).acquireLease(durationS, { abortSignal });
    try {
      // The blob (or container) does not exist yet: create it once, then try again.
      await retryAfterCreating(
        acquire,
        (error) => storageFailure(error).statusCode === 404,
        () => this.ensureExists({ abortSignal }),
      );
      return { acquired: true };
    } catch (error) {
      const { code, statusCode } = storageFailure(error);
      // Someone holds it, or it is breaking: losing the race, not an error. (Azurite answers LeaseIsBreaking… only to
      // the breaking lease's own id; Azure documents it for any acquire during the break period.)
      if (statusCode === 409 && (code === "LeaseAlreadyPresent" || code === "LeaseIsBreakingAndCannotBeAcquired"))
        return { acquired: false };
      throw toLibraryError(error, `Acquiring lease ${this.name}`, abortSignal);
    }
  }

  /** {@inheritDoc LeaseStore.renew} */
  async renew(leaseId: string, options: Abortable = {}): Promise<void> {
    const { abortSignal } = options;
    try {
      await this.blob.getBlobLeaseClient(leaseId).renewLease({ abortSignal });
    } catch (error) {
      throw this.lostOr(error, `Renewing lease ${this.name}`, abortSignal);
    }
  }

  /** {@inheritDoc LeaseStore.release} */
  async release(leaseId: string, options: Abortable = {}): Promise<void> {
    const { abortSignal } = options;
    try {
      await this.blob.getBlobLeaseClient(leaseId).releaseLease({ abortSignal });
    } catch (error) {
      // 409: the lease is no longer ours (expired and taken, or broken); 404: the blob is gone. Nothing to release.
      const { statusCode } = storageFailure(error);
      if (statusCode === 409 || statusCode === 404) return;
      throw toLibraryError(error, `Releasing lease ${this.name}`, abortSignal);
    }
  }

  /** {@inheritDoc LeaseStore.breakLease} */
  async breakLease(breakPeriodS: number, options: Abortable = {}): Promise<void> {
    const { abortSignal } = options;
    try {
      await this.blob.getBlobLeaseClient().breakLease(breakPeriodS, { abortSignal });
    } catch (error) {
      // 409 LeaseNotPresentWithLeaseOperation, or 404: nobody holds it; breaking is then a no-op.
      const { statusCode } = storageFailure(error);
      if (statusCode === 409 || statusCode === 404) return;
      throw toLibraryError(error, `Breaking lease ${this.name}`, abortSignal);
    }
  }

  /** {@inheritDoc LeaseStore.breakIfUnchanged} */
  async breakIfUnchanged(version: string, record: LeaderRecord, options: Abortable = {}): Promise<BreakOutcome> {
    const { abortSignal } = options;
    const conditions = { ifMatch: version };
    try {
      await this.blob.getBlobLeaseClient().breakLease(0, { conditions, abortSignal });
    } catch (error) {
      const { statusCode } = storageFailure(error);
      // 412: a heartbeat or a record write landed since `version` was read; 404: the blob is gone (and its version).
      if (statusCode === 412 || statusCode === 404) return "changed";
      // 409 LeaseNotPresentWithLeaseOperation: nobody holds the lease — its holder gave it back since the read (a
      // release leaves the version as it was). Nothing was broken, so no mark: the term after it follows a release.
      if (statusCode === 409) return "not-held";
      throw toLibraryError(error, `Breaking lease ${this.name}`, abortSignal);
    }
    // No lease id: the lease is broken, so the blob takes writes without one. A contender that acquired meanwhile holds
    // it again and this write is refused (412): that term's own record write moves the version on instead.
    await this.blob.setMetadata(recordMetadata(record), { conditions, abortSignal }).catch(() => undefined);
    return "broken";
  }

  /** {@inheritDoc LeaseStore.read} */
  async read(options: Abortable = {}): Promise<LeaseSnapshot> {
    const { abortSignal } = options;
    try {
      const properties = await this.blob.getProperties({ abortSignal });
      return {
        state: properties.leaseState ?? "available",
        record: parseRecord(properties.metadata ?? {}),
        version: properties.etag,
      };
    } catch (error) {
      // Not created yet: nobody has led. The first acquire creates it.
      if (storageFailure(error).statusCode === 404) return { state: "available", record: EMPTY_RECORD };
      throw toLibraryError(error, `Reading lease ${this.name}`, abortSignal);
    }
  }

  /** {@inheritDoc LeaseStore.writeRecord} */
  async writeRecord(leaseId: string, record: LeaderRecord, options: Abortable = {}): Promise<void> {
    const { abortSignal } = options;
    try {
      await this.blob.setMetadata(recordMetadata(record), { conditions: { leaseId }, abortSignal });
    } catch (error) {
      throw this.lostOr(error, `Writing leader record to ${this.name}`, abortSignal, record.epoch);
    }
  }

  /** {@inheritDoc LeaseStore.readRevocation} */
  async readRevocation(options: Abortable = {}): Promise<Revocation | undefined> {
    const { abortSignal } = options;
    try {
      const properties = await this.revocationBlob.getProperties({ abortSignal });
      return parseRevocation(properties.metadata ?? {});
    } catch (error) {
      if (storageFailure(error).statusCode === 404) return undefined;
      throw toLibraryError(error, `Reading revocation of ${this.name}`, abortSignal);
    }
  }

  /** {@inheritDoc LeaseStore.revoke} */
  async revoke(epoch: number, options: Abortable = {}): Promise<void> {
    const { abortSignal } = options;
    // A fresh id per request: the term that honours a request marks only that one (a newer one stops the next term).
    const metadata = { [REVOCATION_META.revokedEpoch]: String(epoch), [REVOCATION_META.requestId]: randomUUID() };
    const upload = (): Promise<unknown> =>
      this.revocationBlob.getBlockBlobClient().upload("", 0, { metadata, abortSignal });
    try {
      await upload().catch(async (error: unknown) => {
        if (storageFailure(error).statusCode !== 404) throw error;
        await this.ensureExists({ abortSignal });
        await upload();
      });
    } catch (error) {
      throw toLibraryError(error, `Requesting step-down on ${this.name}`, abortSignal);
    }
  }

  /** {@inheritDoc LeaseStore.honourRevocation} */
  async honourRevocation(epoch: number, options: HonourOptions = {}): Promise<void> {
    const { abortSignal, requestId } = options;
    try {
      const properties = await this.revocationBlob.getProperties({ abortSignal });
      const stored = parseRevocation(properties.metadata ?? {});
      if (stored?.epoch !== epoch || (requestId !== undefined && stored.requestId !== requestId)) return;
      // Conditional on the version read: a newer request written meanwhile is kept, not overwritten.
      const metadata = {
        ...(properties.metadata ?? {}),
        [REVOCATION_META.revokedEpoch]: String(epoch),
        [REVOCATION_META.honoured]: "true",
      };
      await this.revocationBlob.setMetadata(metadata, { conditions: { ifMatch: properties.etag }, abortSignal });
    } catch (error) {
      const { statusCode } = storageFailure(error);
      if (statusCode === 404 || statusCode === 412) return;
      throw toLibraryError(error, `Marking the step-down of epoch ${epoch} honoured on ${this.name}`, abortSignal);
    }
  }

  /**
   * 409/412 on a lease-conditioned request means the lease is not ours any more, and so does 404: the lease blob (or
   * its container) was deleted, and with it the lease. Anything else is unexpected. `epoch` is 0 for a request that
   * names none (a renewal); the term's own `LeadershipLostError`, whose cause this becomes, names the term's epoch.
   */
  private lostOr(error: unknown, operation: string, abortSignal: AbortSignal | undefined, epoch = 0): Error {
    const { code, statusCode } = storageFailure(error);
    if (!abortSignal?.aborted && (statusCode === 409 || statusCode === 412 || statusCode === 404)) {
      return new LeadershipLostError(
        "lost",
        epoch,
        `${operation}: storage says the lease is no longer ours (${statusCode} ${code ?? ""}).`,
        { cause: error },
      );
    }
    return toLibraryError(error, operation, abortSignal);
  }
}
