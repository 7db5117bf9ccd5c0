import type { BlobClient, ContainerClient } from "@azure/storage-blob";
import { ConfigurationError } from "../library/errors.js";

/**
 * Azure's naming rule for blob containers and queues: 3–63 lowercase letters, digits or single hyphens, starting and
 * ending with a letter or digit.
 */
export const AZURE_CONTAINER_OR_QUEUE_NAME = /^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/** What {@link AZURE_CONTAINER_OR_QUEUE_NAME} allows, for error messages. */
export const AZURE_CONTAINER_OR_QUEUE_NAME_RULE =
  "3–63 lowercase letters, digits or single hyphens, starting and ending with a letter or digit";

/** What a blob name may not contain, for error messages (see {@link blobIn}). */
export const BLOB_DOT_SEGMENT_RULE =
  'blob names may not contain "." or ".." segments (between "/" or "\\", which storage reads as "/")';

/** Whether a blob name has a "." or ".." path segment, counting "\" as a separator as storage does. */
export function hasDotSegment(name: string): boolean {
  return name.split(/[\\/]/).some((segment) => segment === "." || segment === "..");
}

/**
 * The client of blob `name` in `container`, refusing a name that would address any other blob: the SDK puts the name
 * into the URL's path, where URL parsing resolves "." and ".." segments (`../other/x` is blob `x` of container
 * `other`). Also refused: an empty name (the container itself), and — whatever the SDK does with a name — any URL whose
 * path does not lie inside the container's.
 *
 * @throws ConfigurationError naming the blob, the container and what is allowed.
 */
export function blobIn(container: ContainerClient, name: string): BlobClient {
  const refuse = (why: string): ConfigurationError =>
    new ConfigurationError(
      `Blob name ${JSON.stringify(name)} is refused in container "${container.containerName}": ${why}; ${BLOB_DOT_SEGMENT_RULE}.`,
    );
  if (name.length === 0) throw refuse("it is empty");
  if (hasDotSegment(name)) throw refuse("its dot segments would address a blob elsewhere, even in another container");
  let blob: BlobClient;
  try {
    blob = container.getBlobClient(name);
  } catch {
    throw refuse("it is not a blob name the storage client can address");
  }
  if (!new URL(blob.url).pathname.startsWith(`${new URL(container.url).pathname.replace(/\/$/, "")}/`))
    throw refuse(`its URL (${blob.url}) lies outside the container`);
  return blob;
}
