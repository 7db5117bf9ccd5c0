// A user's code that writes with the package's storage clients and handles the SDK's errors with the SDK it imports
// itself (test/consumer/sdk.test.ts). The same source is built as ESM and as CommonJS.
import { RestError as PipelineRestError } from "@azure/core-rest-pipeline";
import { BlobServiceClient, RestError } from "@azure/storage-blob";
import { storageClientsFromSettings } from "azure-leader-coordinator";

async function main(): Promise<void> {
  // Compiles only if the package's client is the app's own BlobServiceClient (TS2322 when the two are separate
  // declarations, as the CommonJS-only package's was in an ESM app).
  const blob: BlobServiceClient = storageClientsFromSettings("COORDINATION_STORAGE").blob;
  const container = blob.getContainerClient(process.argv[2] ?? "created-twice");
  await container.create();
  try {
    await container.create();
    console.log(JSON.stringify({ conflict: false }));
  } catch (error) {
    // The blob-digest example's check: a conflict on redelivery is expected, anything else is rethrown.
    console.log(
      JSON.stringify({
        conflict: true,
        statusCode: (error as { statusCode?: unknown }).statusCode,
        restError: error instanceof RestError,
        pipelineRestError: error instanceof PipelineRestError,
      }),
    );
  }
}

void main();
