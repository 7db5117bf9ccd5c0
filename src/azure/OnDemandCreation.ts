import type { Abortable } from "../library/util/delay.js";
import { storageFailure } from "./storageErrors.js";

/**
 * Runs `operation`; when it fails because what it writes to is missing (`isMissing(error)`: a container, a queue, a
 * blob), runs `create` and then `operation` once more. Any other failure, a failed creation, or a failure of the
 * second try rejects as it is: the caller maps it to the library's errors. The one "create on not-found, then retry"
 * of the adapters (and of the local host's timer lock).
 */
export async function retryAfterCreating<T>(
  operation: () => Promise<T>,
  isMissing: (error: unknown) => boolean,
  create: () => Promise<unknown>,
): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (!isMissing(error)) throw error;
  }
  await create();
  return operation();
}

/**
 * Creates a container or queue when a request finds it missing. Concurrent callers share the creation in flight, but
 * a finished one is forgotten: a failed creation is tried again by the next caller instead of being cached for ever,
 * and a container deleted after it was first created is created again.
 */
export class OnDemandCreation {
  private inFlight: Promise<unknown> | undefined;

  /**
   * @param create creates it, idempotently (`createIfNotExists`)
   * @param missingCode the storage error code of a request that found it missing
   */
  constructor(
    private readonly create: (options: Abortable) => Promise<unknown>,
    private readonly missingCode: "ContainerNotFound" | "QueueNotFound",
  ) {}

  /**
   * Runs `operation`; when storage answers {@link missingCode}, creates it (see {@link ensure}) and runs `operation`
   * once more.
   */
  run<T>(operation: () => Promise<T>, options: Abortable = {}): Promise<T> {
    return retryAfterCreating(
      operation,
      (error) => storageFailure(error).code === this.missingCode,
      () => this.ensure(options),
    );
  }

  /** Creates it, or joins the creation already in flight. */
  ensure(options: Abortable = {}): Promise<unknown> {
    if (this.inFlight === undefined) {
      const creation = this.create(options).finally(() => {
        if (this.inFlight === creation) this.inFlight = undefined;
      });
      this.inFlight = creation;
    }
    return this.inFlight;
  }
}
