import { BlobServiceClient } from "@azure/storage-blob";
import { type Settings } from "azure-leader-coordinator/internal";
import { createDemoJob, type Aggregate } from "./demoData.js";
import type { LocalJob } from "./options.js";

/** A job ready to submit: its body, and for the demo the aggregate it must come to. */
export interface PreparedJob {
  readonly body: unknown;
  /** The demo's aggregate, computed independently of the app; undefined for the app's own jobs. */
  readonly expected?: Aggregate;
  /** Where it came from, for the summary ("the demo job", a file name). */
  readonly source: string;
}

/**
 * Prepares the job of a local run: the demo's input blobs uploaded to the input container (`blobPrefix/…`); the app's
 * own job as it is (its blobs are the user's to upload). Undefined without a job.
 */
export async function prepareJob(
  job: LocalJob,
  connectionString: string,
  settings: Settings,
  blobPrefix: string,
): Promise<PreparedJob | undefined> {
  if (job.kind === "none") return undefined;
  if (job.kind === "submission") return { body: job.body, source: job.source };
  const demo = createDemoJob(job.items, blobPrefix);
  const inputs = BlobServiceClient.fromConnectionString(connectionString).getContainerClient(settings.INPUT_CONTAINER);
  // Bounded: thousands of uploads at once exhaust sockets.
  for (let start = 0; start < demo.blobs.length; start += 64) {
    await Promise.all(
      demo.blobs
        .slice(start, start + 64)
        .map((blob) => inputs.getBlockBlobClient(blob.name).upload(blob.text, Buffer.byteLength(blob.text))),
    );
  }
  return { body: demo.spec, expected: demo.expected, source: "the group-by demo job" };
}
