/**
 * Azure's naming rule for blob containers and queues: 3–63 lowercase letters, digits or single hyphens, starting and
 * ending with a letter or digit.
 */
export const AZURE_CONTAINER_OR_QUEUE_NAME = /^(?!.*--)[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/;

/** What {@link AZURE_CONTAINER_OR_QUEUE_NAME} allows, for error messages. */
export const AZURE_CONTAINER_OR_QUEUE_NAME_RULE =
  "3–63 lowercase letters, digits or single hyphens, starting and ending with a letter or digit";
