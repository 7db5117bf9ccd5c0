import type { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import type { ContainerClient } from "@azure/storage-blob";
import type { BlobFiles, InputFiles, OpenedBlob } from "../coordination/ports/ports.js";
import { storageFailure, toLibraryError } from "./storageErrors.js";
import { OnDemandCreation } from "./OnDemandCreation.js";
import { blobIn } from "./azureNames.js";
import type { Abortable } from "../library/util/delay.js";

/**
 * Read-only access to one blob container (the input container): it never writes, creates or deletes anything, and
 * never addresses a blob outside the container (a name with "." or ".." segments is refused: {@link blobIn}).
 */
export class ReadOnlyBlobFiles implements InputFiles {
  constructor(protected readonly container: ContainerClient) {}

  async readText(name: string, options: Abortable = {}): Promise<string | undefined> {
    const { abortSignal } = options;
    const blob = blobIn(this.container, name);
    try {
      // download() is one request; downloadToBuffer() would ask for the properties first.
      const body = (await blob.download(0, undefined, { abortSignal })).readableStreamBody;
      return body === undefined ? "" : (await buffer(body)).toString("utf8");
    } catch (error) {
      if (storageFailure(error).statusCode === 404) return undefined;
      throw toLibraryError(error, `Reading blob ${name}`, abortSignal);
    }
  }

  async open(name: string, options: Abortable = {}): Promise<OpenedBlob | undefined> {
    const { abortSignal } = options;
    const operation = `Reading blob ${name}`;
    const blob = blobIn(this.container, name);
    let body: Readable | undefined;
    let sizeBytes: number;
    let etag: string | undefined;
    try {
      // One request: the size comes with the headers, the body only as it is read.
      const response = await blob.download(0, undefined, { abortSignal });
      body = response.readableStreamBody as Readable | undefined;
      sizeBytes = response.contentLength ?? 0;
      etag = response.etag;
    } catch (error) {
      if (storageFailure(error).statusCode === 404) return undefined;
      throw toLibraryError(error, operation, abortSignal);
    }
    async function* content(): AsyncGenerator<Uint8Array> {
      if (body === undefined) return;
      try {
        for await (const piece of body) yield piece as Uint8Array;
      } catch (error) {
        throw toLibraryError(error, operation, abortSignal);
      }
    }
    return {
      sizeBytes,
      ...(etag === undefined ? {} : { etag }),
      content: content(),
      close: () => body?.destroy(),
    };
  }

  async list(prefix: string, max: number, options: Abortable = {}): Promise<string[]> {
    const { abortSignal } = options;
    const names: string[] = [];
    try {
      for await (const blob of this.container.listBlobsFlat({ prefix, abortSignal })) {
        names.push(blob.name);
        if (names.length >= max) break;
      }
    } catch (error) {
      if (storageFailure(error).code === "ContainerNotFound") return names;
      throw toLibraryError(error, `Listing blobs under ${prefix}`, abortSignal);
    }
    return names;
  }
}

/** The files port on one blob container the app owns (the system container); creates the container on first write. */
export class BlobFilesStore extends ReadOnlyBlobFiles implements BlobFiles {
  private readonly creation = new OnDemandCreation(
    (options) => this.container.createIfNotExists(options),
    "ContainerNotFound",
  );

  async writeText(name: string, text: string, options: Abortable = {}): Promise<void> {
    const { abortSignal } = options;
    const blob = blobIn(this.container, name).getBlockBlobClient();
    const upload = (): Promise<unknown> => blob.upload(text, Buffer.byteLength(text), { abortSignal });
    try {
      await this.creation.run(upload, { abortSignal });
    } catch (error) {
      throw toLibraryError(error, `Writing blob ${name}`, abortSignal);
    }
  }

  /**
   * Creates a blob unless one exists: one upload with `If-None-Match: *`, which storage refuses with 409
   * `BlobAlreadyExists` (answered false) when a blob of that name exists, whoever wrote it.
   */
  async createText(name: string, text: string, options: Abortable = {}): Promise<boolean> {
    const { abortSignal } = options;
    const blob = blobIn(this.container, name).getBlockBlobClient();
    const upload = (): Promise<unknown> =>
      blob.upload(text, Buffer.byteLength(text), { conditions: { ifNoneMatch: "*" }, abortSignal });
    try {
      await this.creation.run(upload, { abortSignal });
      return true;
    } catch (error) {
      const { statusCode, code } = storageFailure(error);
      // 412 as well: a conditional request may be answered so by some service versions and proxies.
      if ((statusCode === 409 && code === "BlobAlreadyExists") || statusCode === 412) return false;
      throw toLibraryError(error, `Creating blob ${name}`, abortSignal);
    }
  }

  /**
   * Deletes a blob and its snapshots (a backup tool's, an operator's: a blob with snapshots refuses a plain delete with
   * 409 SnapshotsPresent, on every try). The container is the app's own; what it removes, it removes whole. One
   * request.
   */
  async delete(name: string, options: Abortable = {}): Promise<void> {
    const { abortSignal } = options;
    const blob = blobIn(this.container, name);
    try {
      await blob.deleteIfExists({ deleteSnapshots: "include", abortSignal });
    } catch (error) {
      throw toLibraryError(error, `Deleting blob ${name}`, abortSignal);
    }
  }
}
