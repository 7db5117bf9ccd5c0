import { DefaultAzureCredential, type TokenCredential } from "@azure/identity";
import { BlobServiceClient, newPipeline as newBlobPipeline, type RequestPolicyFactory } from "@azure/storage-blob";
import { QueueServiceClient, newPipeline as newQueuePipeline } from "@azure/storage-queue";
import { ConfigurationError } from "../library/errors.js";

/**
 * Where the coordination storage account is and how to authenticate to it. The same code path serves Azurite
 * (a connection string) and Azure (service URIs with a managed identity through `DefaultAzureCredential`).
 */
export type StorageConnection =
  | { kind: "connectionString"; connectionString: string }
  | { kind: "identity"; blobServiceUri: string; queueServiceUri: string; credential: TokenCredential };

/** Both service clients of one account. */
export interface StorageClients {
  /** The account's blob service. */
  blob: BlobServiceClient;
  /** The account's queue service. */
  queue: QueueServiceClient;
}

/**
 * Retry policy for every client: a few quick tries with a per-try timeout. Callers that have a deadline (the lease
 * renewal loop) also pass an `abortSignal` that fires at the deadline, so SDK retries can never outlast it — unlike
 * the reference sample, whose 3 × 5 s retries can outlive a 15 s lease.
 */
export const DEFAULT_PIPELINE_OPTIONS = {
  retryOptions: { maxTries: 3, tryTimeoutInMs: 5_000, retryDelayInMs: 200, maxRetryDelayInMs: 1_000 },
} as const;

/** Options of {@link createStorageClients}. */
export interface StorageClientOptions {
  /** @default the SDK's retry policy; the app passes {@link DEFAULT_PIPELINE_OPTIONS} */
  retryOptions?: typeof DEFAULT_PIPELINE_OPTIONS.retryOptions;
  /**
   * Request policies run for every request of both clients (the SDK's own pipeline customisation). @default the
   * process's, see {@link addProcessRequestPolicy}
   */
  policies?: readonly RequestPolicyFactory[];
}

/**
 * Request policies every client built here afterwards gets, for the whole process: instrumentation a tool installs at
 * process start, before the app builds its clients (the throughput benchmark counts each instance's storage requests
 * with one). Nothing in the app adds any.
 */
const processPolicies: RequestPolicyFactory[] = [];

/** Adds a request policy to every client {@link createStorageClients} builds from now on in this process. */
export function addProcessRequestPolicy(policy: RequestPolicyFactory): void {
  processPolicies.push(policy);
}

/** Builds the blob and queue clients of one account. */
export function createStorageClients(
  connection: StorageConnection,
  options: StorageClientOptions = DEFAULT_PIPELINE_OPTIONS,
): StorageClients {
  // Without retryOptions, the SDK's own retry policy (the local host's trigger polling uses that, as before).
  const pipelineOptions = options.retryOptions === undefined ? {} : { retryOptions: options.retryOptions };
  const plain: StorageClients =
    connection.kind === "connectionString"
      ? {
          blob: BlobServiceClient.fromConnectionString(connection.connectionString, pipelineOptions),
          queue: QueueServiceClient.fromConnectionString(connection.connectionString, pipelineOptions),
        }
      : {
          blob: new BlobServiceClient(connection.blobServiceUri, connection.credential, pipelineOptions),
          queue: new QueueServiceClient(connection.queueServiceUri, connection.credential, pipelineOptions),
        };
  const policies = options.policies ?? processPolicies;
  if (policies.length === 0) return plain;
  // The same clients on a pipeline with the policies added: same URL (and SAS), same credential, same options. One
  // account, one credential (the queue client keeps its own out of reach).
  const credential = connection.kind === "identity" ? connection.credential : plain.blob.credential;
  const blobPipeline = newBlobPipeline(credential, pipelineOptions);
  const queuePipeline = newQueuePipeline(credential, pipelineOptions);
  blobPipeline.factories.push(...policies);
  queuePipeline.factories.push(...policies);
  return {
    blob: new BlobServiceClient(plain.blob.url, blobPipeline),
    queue: new QueueServiceClient(plain.queue.url, queuePipeline),
  };
}

/** What may be given beside the connection settings. */
export interface CredentialOptions {
  /**
   * The identity the storage clients authenticate as with the identity-based settings (`<PREFIX>__blobServiceUri`,
   * `__queueServiceUri`), instead of the `DefaultAzureCredential` those settings would build (`__clientId` is then
   * not read): any `TokenCredential` of `@azure/identity` (`ManagedIdentityCredential`, `WorkloadIdentityCredential`,
   * a `ChainedTokenCredential`, …), as the Azure SDK clients take one. A connection string (local, Azurite) carries
   * its own key and does not use it. @default a `DefaultAzureCredential` (with `<PREFIX>__clientId`, if set)
   */
  credential?: TokenCredential;
}

/**
 * Checks that a `credential` option is a `TokenCredential` (a `getToken` method), so a wrong value fails when the
 * options are read, not at the first storage request.
 *
 * @throws ConfigurationError when it is not.
 */
export function checkCredential(credential: unknown): TokenCredential | undefined {
  if (credential === undefined) return undefined;
  if (typeof credential === "object" && credential !== null && "getToken" in credential) {
    if (typeof credential.getToken === "function") return credential as TokenCredential;
  }
  throw new ConfigurationError(
    `credential must be a TokenCredential (an object with a getToken method, e.g. new ManagedIdentityCredential() or new DefaultAzureCredential() from @azure/identity); got ${credential === null ? "null" : typeof credential}.`,
  );
}

/**
 * Resolves a Functions-style connection setting by prefix, as the host does: `<PREFIX>` holding a connection string
 * (local, Azurite), or `<PREFIX>__blobServiceUri` + `<PREFIX>__queueServiceUri` (+ `<PREFIX>__clientId` for a
 * user-assigned identity) for managed identity in Azure, authenticated with `options.credential` when given.
 *
 * @throws ConfigurationError when neither form is present, or the credential is not a `TokenCredential`.
 */
export function connectionFromSettings(
  prefix: string,
  env: Record<string, string | undefined> = process.env,
  options: CredentialOptions = {},
): StorageConnection {
  const given = checkCredential(options.credential);
  const connectionString = env[prefix];
  if (connectionString !== undefined && connectionString.trim() !== "") {
    return { kind: "connectionString", connectionString: connectionString.trim() };
  }
  const blobServiceUri = env[`${prefix}__blobServiceUri`];
  const queueServiceUri = env[`${prefix}__queueServiceUri`];
  if (blobServiceUri && queueServiceUri) {
    const clientId = env[`${prefix}__clientId`];
    const credential = given ?? new DefaultAzureCredential(clientId ? { managedIdentityClientId: clientId } : {});
    return { kind: "identity", blobServiceUri, queueServiceUri, credential };
  }
  throw new ConfigurationError(
    `Storage connection "${prefix}" is not configured: set ${prefix} to a connection string (local/Azurite only), ` +
      `or ${prefix}__blobServiceUri and ${prefix}__queueServiceUri (plus ${prefix}__clientId for a user-assigned identity) in Azure.`,
  );
}

/**
 * The blob and queue clients of a storage account named by a Functions-style connection setting (the settings of a
 * Functions connection: `<PREFIX>` or `<PREFIX>__blobServiceUri`, `__queueServiceUri`, `__clientId`): what a task kind
 * uses to write its outputs, authenticated as the app is — a connection string locally, the app's managed identity in
 * Azure (or `options.credential`). Clients retry as the app's do.
 *
 * @throws ConfigurationError when the connection is not configured, or the credential is not a `TokenCredential`.
 */
export function storageClientsFromSettings(
  connection = "COORDINATION_STORAGE",
  env: Record<string, string | undefined> = process.env,
  options: CredentialOptions = {},
): StorageClients {
  return createStorageClients(connectionFromSettings(connection, env, options), DEFAULT_PIPELINE_OPTIONS);
}
