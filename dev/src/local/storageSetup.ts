import { BlobServiceClient } from "@azure/storage-blob";
import { QueueServiceClient } from "@azure/storage-queue";
import { type Settings } from "azure-leader-coordinator/internal";

/**
 * Creates the containers and queues the app uses, as the Bicep templates do in Azure: the lease, state, input and
 * system containers, the work and results queues with their `-poison` queues, and the wake-up queue. Idempotent, so
 * pointing the runner at existing storage (COORDINATION_STORAGE set) is safe. The input container is the user's: the
 * app itself never creates it (nor writes in it); the runner does, for the demo's input blobs.
 */
export async function ensureAppStorage(
  connectionString: string,
  settings: Settings,
): Promise<{ containers: string[]; queues: string[] }> {
  const blobs = BlobServiceClient.fromConnectionString(connectionString);
  const queues = QueueServiceClient.fromConnectionString(connectionString);
  const containers = [
    ...new Set([
      settings.LEASE_CONTAINER,
      settings.STATE_CONTAINER,
      settings.INPUT_CONTAINER,
      settings.SYSTEM_CONTAINER,
    ]),
  ];
  const queueNames = [
    settings.WORK_QUEUE,
    `${settings.WORK_QUEUE}-poison`,
    settings.RESULTS_QUEUE,
    `${settings.RESULTS_QUEUE}-poison`,
    settings.WAKE_QUEUE,
  ];
  await Promise.all([
    ...containers.map((name) => blobs.getContainerClient(name).createIfNotExists()),
    ...queueNames.map((name) => queues.getQueueClient(name).createIfNotExists()),
  ]);
  return { containers, queues: queueNames };
}
