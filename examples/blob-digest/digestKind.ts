import { createHash } from "node:crypto";
import { RestError, type BlobServiceClient, type ContainerClient } from "@azure/storage-blob";
import { defineTaskKind, ItemError } from "azure-leader-coordinator";
import { z } from "zod";

/**
 * An I/O task kind: for each item (a blob in the input container) it writes one derived blob — the input's size and
 * SHA-256 — into the output container the job names, at `<jobId>/<index>.json`: named by the item's idempotency key,
 * and created only if absent, so a unit delivered again (its worker killed mid-unit) writes nothing twice. The job's
 * aggregate counts the files and their bytes.
 */

/** The job's params: where the derived blobs go (an Azure container name). */
export const digestParams = z.strictObject({
  outputContainer: z
    .string()
    .regex(/^(?=.{3,63}$)[a-z0-9]+(-[a-z0-9]+)*$/, "must be a container name: 3–63 lowercase letters, digits and '-'"),
});

/** What one item adds to the job's aggregate. */
export interface DigestTotals {
  files: number;
  bytes: number;
}

/** What each derived blob holds. */
export interface Digest {
  source: string;
  bytes: number;
  sha256: string;
}

/**
 * The kind, over the storage account the outputs go to (built once per process, on first use).
 *
 * @param blobService the account's client, e.g. `storageClientsFromSettings().blob` (the app's own identity in Azure;
 *   it needs a data role that can write the output container, such as Storage Blob Data Contributor)
 */
export function blobDigestKind(blobService: () => BlobServiceClient) {
  const containers = new Map<string, Promise<ContainerClient>>();
  /** The output container, created once per process if missing. */
  const container = (name: string): Promise<ContainerClient> => {
    let ready = containers.get(name);
    if (ready === undefined) {
      const client = blobService().getContainerClient(name);
      ready = client.createIfNotExists().then(() => client);
      // A failed creation is tried again by the next item, not cached.
      ready.catch(() => containers.delete(name));
      containers.set(name, ready);
    }
    return ready;
  };
  return defineTaskKind({
    name: "blob-digest",
    params: digestParams,
    // I/O-bound: several items of a unit at once.
    concurrency: 8,
    async process(input, context): Promise<DigestTotals> {
      if (input.blob === undefined)
        throw new ItemError('blob-digest takes blob items ({ "blob": … }), not inline ones');
      const digest: Digest = {
        source: input.blob,
        bytes: input.bytes.byteLength,
        sha256: createHash("sha256").update(input.bytes).digest("hex"),
      };
      const body = JSON.stringify(digest);
      const target = (await container(context.params.outputContainer)).getBlockBlobClient(
        `${context.idempotencyKey}.json`,
      );
      try {
        await target.upload(body, Buffer.byteLength(body), {
          conditions: { ifNoneMatch: "*" },
          blobHTTPHeaders: { blobContentType: "application/json" },
          abortSignal: context.abortSignal,
        });
        context.logger.info(`blob-digest: wrote ${target.name}`);
      } catch (error) {
        // 409: an earlier delivery of this item wrote it (the same bytes: the digest depends on the input only).
        if (!(error instanceof RestError && error.statusCode === 409)) throw error;
        context.logger.info(`blob-digest: ${target.name} already written by an earlier delivery`);
      }
      return { files: 1, bytes: digest.bytes };
    },
    aggregate: {
      empty: (): DigestTotals => ({ files: 0, bytes: 0 }),
      merge: (a, b) => ({ files: a.files + b.files, bytes: a.bytes + b.bytes }),
    },
  });
}
