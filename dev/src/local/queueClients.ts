import type { QueueClient, QueueServiceClient } from "@azure/storage-queue";
import { createStorageClients } from "azure-leader-coordinator/internal";

/**
 * Queue clients for bindings, by the binding's `connection` setting (default `AzureWebJobsStorage`). Locally the
 * setting holds a connection string (Azurite). Identity-based connections (`<NAME>__queueServiceUri` with a
 * credential) are what Azure uses; the local host does not emulate them and says so (docs/LOCAL-HOST.md, "Known gaps").
 */
export class QueueClients {
  private readonly services = new Map<string, QueueServiceClient>();

  constructor(private readonly env: Record<string, string | undefined>) {}

  /**
   * The client of `queueName` on the account named by `connection`.
   *
   * @throws Error naming the function and the setting when no connection string is set.
   */
  queue(connection: string | undefined, queueName: string, functionName: string): QueueClient {
    const setting = connection ?? "AzureWebJobsStorage";
    let service = this.services.get(setting);
    if (service === undefined) {
      const connectionString = this.env[setting];
      if (connectionString === undefined || connectionString.trim() === "") {
        const identityHint =
          this.env[`${setting}__queueServiceUri`] === undefined
            ? ""
            : ` (${setting}__queueServiceUri is set, but identity-based connections are not emulated locally)`;
        throw new Error(
          `Function "${functionName}": connection "${setting}" needs app setting ${setting} to hold a storage connection string${identityHint}.`,
        );
      }
      // The SDK's retry policy (no retryOptions), and the process's request policies, if a benchmark added one.
      service = createStorageClients({ kind: "connectionString", connectionString: connectionString.trim() }, {}).queue;
      this.services.set(setting, service);
    }
    return service.getQueueClient(queueName);
  }
}
