import { buffer } from "node:stream/consumers";
import type { BlobServiceClient, ContainerClient } from "@azure/storage-blob";
import { ConcurrentUpdateError, ConfigurationError, StorageError } from "../library/errors.js";
import { storageFailure, toLibraryError } from "./storageErrors.js";
import {
  MAX_SUMMARY_BYTES,
  type StateStore,
  type StoredState,
  type StoredSummary,
  type WriteCondition,
  type WriteOptions,
} from "../library/fencing/StateStore.js";
import { OnDemandCreation } from "./OnDemandCreation.js";
import { blobIn } from "./azureNames.js";
import type { Abortable } from "../library/util/delay.js";

/** The metadata key of a document's summary (metadata keys come back lower-cased, so it is written lower-case). */
const SUMMARY_METADATA = "summary";

/**
 * The state port on Azure Blob Storage: one JSON block blob per key, the epoch in its metadata, and a document's
 * summary there too (base64 of its UTF-8, written in the same upload, read with a HEAD request). A key is a blob name
 * in the container; one with "." or ".." segments is refused (it would address another blob: `blobIn`,
 * src/azure/azureNames.ts).
 */
export class BlobStateStore implements StateStore {
  private readonly creation = new OnDemandCreation(
    (options) => this.container.createIfNotExists(options),
    "ContainerNotFound",
  );
  private readonly container: ContainerClient;

  /** Documents in `containerName` of `service` (created at the first write that finds it missing). */
  constructor(service: BlobServiceClient, containerName = "coordinator-state") {
    this.container = service.getContainerClient(containerName);
  }

  /** {@inheritDoc StateStore.read} */
  async read(key: string, options: Abortable = {}): Promise<StoredState | undefined> {
    const { abortSignal } = options;
    let body: Buffer;
    let etag: string | undefined;
    let epochText: string | undefined;
    const blob = blobIn(this.container, key);
    try {
      const response = await blob.download(0, undefined, { abortSignal });
      etag = response.etag;
      epochText = response.metadata?.epoch;
      body = response.readableStreamBody === undefined ? Buffer.alloc(0) : await buffer(response.readableStreamBody);
    } catch (error) {
      if (storageFailure(error).statusCode === 404) return undefined;
      throw toLibraryError(error, `Reading state ${key}`, abortSignal);
    }
    if (etag === undefined)
      throw new StorageError("MissingETag", undefined, `Reading state ${key}: storage returned no ETag.`);
    let value: unknown;
    try {
      value = JSON.parse(body.toString("utf8"));
    } catch (error) {
      throw new StorageError(
        "CorruptState",
        undefined,
        `State ${key} is not valid JSON; it was not written by this library. Inspect or delete the blob.`,
        { cause: error },
      );
    }
    return { value, etag, epoch: Number(epochText ?? 0) };
  }

  /** {@inheritDoc StateStore.readSummary} */
  async readSummary(key: string, options: Abortable = {}): Promise<StoredSummary | undefined> {
    const { abortSignal } = options;
    try {
      const properties = await blobIn(this.container, key).getProperties({ abortSignal });
      if (properties.etag === undefined)
        throw new StorageError(
          "MissingETag",
          undefined,
          `Reading the summary of state ${key}: storage returned no ETag.`,
        );
      const encoded = properties.metadata?.[SUMMARY_METADATA];
      return {
        summary: encoded === undefined ? undefined : Buffer.from(encoded, "base64").toString("utf8"),
        etag: properties.etag,
        epoch: Number(properties.metadata?.epoch ?? 0),
        bytes: properties.contentLength ?? 0,
      };
    } catch (error) {
      if (error instanceof StorageError) throw error;
      if (storageFailure(error).statusCode === 404) return undefined;
      throw toLibraryError(error, `Reading the summary of state ${key}`, abortSignal);
    }
  }

  /** {@inheritDoc StateStore.delete} */
  async delete(key: string, condition: { ifMatch: string }, options: Abortable = {}): Promise<void> {
    const { abortSignal } = options;
    const blob = blobIn(this.container, key);
    try {
      await blob.delete({ conditions: { ifMatch: condition.ifMatch }, abortSignal });
    } catch (error) {
      const { statusCode, code } = storageFailure(error);
      if (statusCode === 404) return;
      // A conditional request on a blob that is gone may answer 412 too (Azurite does): gone is what was asked for.
      if (statusCode === 412 && !(await blob.exists({ abortSignal }).catch(() => true))) return;
      if (statusCode === 412)
        throw new ConcurrentUpdateError(
          `State ${key} changed since it was read (${statusCode} ${code ?? ""}); it was not deleted.`,
          { cause: error },
        );
      throw toLibraryError(error, `Deleting state ${key}`, abortSignal);
    }
  }

  /** {@inheritDoc StateStore.write} */
  async write(
    key: string,
    value: unknown,
    epoch: number,
    condition: WriteCondition,
    options: WriteOptions = {},
  ): Promise<{ etag: string }> {
    const { abortSignal, summary } = options;
    if (summary !== undefined && Buffer.byteLength(summary) > MAX_SUMMARY_BYTES)
      throw new ConfigurationError(
        `The summary of state ${key} is ${Buffer.byteLength(summary)} bytes; a summary may have at most ${MAX_SUMMARY_BYTES} (it travels in the blob's metadata).`,
      );
    const body = JSON.stringify(value);
    const blob = blobIn(this.container, key).getBlockBlobClient();
    const metadata: Record<string, string> = { epoch: String(epoch) };
    if (summary !== undefined) metadata[SUMMARY_METADATA] = Buffer.from(summary, "utf8").toString("base64");
    const upload = (): ReturnType<typeof blob.upload> =>
      blob.upload(body, Buffer.byteLength(body), {
        metadata,
        blobHTTPHeaders: { blobContentType: "application/json" },
        conditions: condition,
        abortSignal,
      });
    try {
      const response = await this.creation.run(upload, { abortSignal });
      if (response.etag === undefined)
        throw new StorageError("MissingETag", undefined, `Writing state ${key}: storage returned no ETag.`);
      return { etag: response.etag };
    } catch (error) {
      const { statusCode, code } = storageFailure(error);
      if (statusCode === 412 || (statusCode === 409 && code === "BlobAlreadyExists")) {
        throw new ConcurrentUpdateError(
          `State ${key} changed since it was read (${statusCode} ${code ?? ""}); read it again and retry.`,
          { cause: error },
        );
      }
      throw toLibraryError(error, `Writing state ${key}`, abortSignal);
    }
  }
}
