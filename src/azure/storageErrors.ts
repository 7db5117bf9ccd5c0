import { RestError } from "@azure/storage-blob";
import { StorageError } from "../library/errors.js";
import { abortReason } from "../library/util/delay.js";

/** The storage error code (`x-ms-error-code`) and HTTP status of a failed request, when storage answered. */
export interface StorageFailure {
  code: string | undefined;
  statusCode: number | undefined;
}

/** Reads code and status from an SDK error; anything else (a network failure) has neither. */
export function storageFailure(error: unknown): StorageFailure {
  if (error instanceof RestError) return { code: error.code, statusCode: error.statusCode };
  return { code: undefined, statusCode: undefined };
}

/**
 * Turns an unexpected SDK failure into the library's error: a {@link StorageError} already made (by a step of the
 * operation, e.g. a creation) passes through as it is; the caller's abort passes through as the signal's reason;
 * anything else becomes a {@link StorageError} that names the operation and keeps the SDK error as `cause`.
 */
export function toLibraryError(error: unknown, operation: string, abortSignal: AbortSignal | undefined): Error {
  if (error instanceof StorageError) return error;
  if (abortSignal?.aborted) return abortReason(abortSignal);
  const { code, statusCode } = storageFailure(error);
  if (statusCode === undefined) {
    return new StorageError(
      "StorageUnavailable",
      undefined,
      `${operation} failed: storage did not answer (${error instanceof Error ? error.message : String(error)}). Check the endpoint and network; the operation is safe to retry.`,
      { cause: error },
    );
  }
  return new StorageError(
    code ?? `Http${statusCode}`,
    statusCode,
    `${operation} failed: storage answered ${statusCode} ${code ?? ""}. This is unexpected; see the cause for details.`,
    { cause: error },
  );
}
