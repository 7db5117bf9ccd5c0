import { randomUUID } from "node:crypto";
import { BlobServiceClient } from "@azure/storage-blob";
import { afterAll, beforeAll } from "vitest";
import { startAzurite, type Azurite, type AzuriteOptions } from "../../dev/src/local/azurite";

/** Starts one Azurite for the test file (free ports, in memory unless `persistent`) and stops it afterwards. */
export function useAzurite(options: AzuriteOptions = {}): {
  readonly azurite: Azurite;
  blobService(): BlobServiceClient;
} {
  let azurite: Azurite | undefined;
  beforeAll(async () => {
    azurite = await startAzurite(options);
  });
  afterAll(async () => {
    await azurite?.stop();
  });
  const get = (): Azurite => {
    if (azurite === undefined)
      throw new Error("Azurite is not running: useAzurite() must be called at the top of a describe block.");
    return azurite;
  };
  return {
    get azurite() {
      return get();
    },
    blobService: () =>
      BlobServiceClient.fromConnectionString(get().connectionString, {
        // Tests that stop storage want failures fast, not SDK back-off.
        retryOptions: { maxTries: 1, tryTimeoutInMs: 3_000 },
      }),
  };
}

/** A fresh, valid container name so tests never share state. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}
