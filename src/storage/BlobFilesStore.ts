import type { ContainerClient } from "@azure/storage-blob";
import type { BlobFiles, PortOptions } from "../coordination/ports";
import { storageFailure, toLibraryError } from "./storageErrors";
import { streamToBuffer } from "./streams";
import { OnDemandCreation } from "./OnDemandCreation";

/** The files port on one blob container; creates the container on first write. */
export class BlobFilesStore implements BlobFiles {
  private readonly creation = new OnDemandCreation((options) => this.container.createIfNotExists(options));

  constructor(private readonly container: ContainerClient) {}

  async readText(name: string, options: PortOptions = {}): Promise<string | undefined> {
    const { abortSignal } = options;
    try {
      // download() is one request; downloadToBuffer() would ask for the properties first.
      const response = await this.container.getBlobClient(name).download(0, undefined, { abortSignal });
      return (await streamToBuffer(response.readableStreamBody)).toString("utf8");
    } catch (error) {
      if (storageFailure(error).statusCode === 404) return undefined;
      throw toLibraryError(error, `Reading blob ${name}`, abortSignal);
    }
  }

  async writeText(name: string, text: string, options: PortOptions = {}): Promise<void> {
    const { abortSignal } = options;
    const upload = (): Promise<unknown> => this.container.getBlockBlobClient(name).upload(text, Buffer.byteLength(text), { abortSignal });
    try {
      await upload().catch(async (error: unknown) => {
        if (storageFailure(error).code !== "ContainerNotFound") throw error;
        await this.creation.ensure({ abortSignal });
        return upload();
      });
    } catch (error) {
      throw toLibraryError(error, `Writing blob ${name}`, abortSignal);
    }
  }

  async list(prefix: string, max: number, options: PortOptions = {}): Promise<string[]> {
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

  async delete(name: string, options: PortOptions = {}): Promise<void> {
    const { abortSignal } = options;
    try {
      await this.container.getBlobClient(name).deleteIfExists({ abortSignal });
    } catch (error) {
      throw toLibraryError(error, `Deleting blob ${name}`, abortSignal);
    }
  }
}
