import { ConcurrentUpdateError, LeadershipLostError, StaleEpochError } from "../errors.js";
import type { StateStore, WriteOptions } from "./StateStore.js";
import type { Abortable } from "../util/delay.js";

/** The part of a leadership term the fenced store needs: its epoch and a live check. */
export interface Fence {
  /** The writer's epoch (fencing token). */
  readonly epoch: number;
  /**
   * Checks that the writer's term still leads, before each write.
   *
   * @throws LeadershipLostError when the writer's term is over (e.g. its local renew deadline passed while frozen).
   */
  assertLeader(): void;
}

/** A document read through the fenced store, with what a later write must be conditioned on. */
export interface Versioned<T> {
  /** The document. */
  value: T;
  /** Its version tag: a write conditioned on it fails if anyone wrote in between. */
  etag: string;
  /** Epoch of the term that wrote this version. */
  epoch: number;
}

/** Options for {@link FencedStateStore.update}. */
export interface UpdateOptions extends Abortable {
  /** How many times to re-read and retry when another writer got in first. @default 5 */
  maxAttempts?: number;
}

/**
 * The coordinator's state, fenced: every write is conditional on the ETag it read AND on no newer epoch having
 * written the document, and is refused outright once the writer's term is over. A stale leader — one whose lease was
 * broken and taken, or that froze past its deadline and woke up — gets a {@link StaleEpochError} and changes nothing.
 *
 * Guarantee per document: stored epochs never decrease, and no write from an older epoch lands after a newer one
 * (the Kleppmann fencing-token rule, enforced with storage's own ETag condition).
 */
export class FencedStateStore {
  constructor(
    private readonly store: StateStore,
    private readonly fence: Fence,
  ) {}

  /** The writer's epoch. */
  get epoch(): number {
    return this.fence.epoch;
  }

  /** Reads a document; `parse` validates its shape (and throws if it is not what the caller expects). */
  async read<T>(key: string, parse: (value: unknown) => T, options: Abortable = {}): Promise<Versioned<T> | undefined> {
    const stored = await this.store.read(key, options);
    if (stored === undefined) return undefined;
    return { value: parse(stored.value), etag: stored.etag, epoch: stored.epoch };
  }

  /**
   * Writes `value` over `previous` (the version read), or creates the document when `previous` is undefined, with
   * `options.summary` beside it when given.
   *
   * @throws StaleEpochError when this writer's term is over or a newer epoch wrote the document (nothing written).
   * @throws ConcurrentUpdateError when a writer of the same or an older epoch got in first (read again and retry).
   */
  async write<T>(
    key: string,
    value: T,
    previous: Versioned<unknown> | undefined,
    options: WriteOptions = {},
  ): Promise<Versioned<T>> {
    const { epoch } = this.fence;
    this.assertLive(key);
    if (previous !== undefined && previous.epoch > epoch) {
      throw new StaleEpochError(
        epoch,
        previous.epoch,
        `Write to ${key} refused: it was written by epoch ${previous.epoch}, newer than this writer's ${epoch}.`,
      );
    }
    const condition = previous === undefined ? ({ ifNoneMatch: "*" } as const) : { ifMatch: previous.etag };
    try {
      const { etag } = await this.store.write(key, value, epoch, condition, options);
      return { value, etag, epoch };
    } catch (error) {
      if (!(error instanceof ConcurrentUpdateError)) throw error;
      // Tell a newer leader's write (this writer is stale: stop) from an ordinary race (retry).
      const current = await this.store.read(key, options);
      if (current !== undefined && current.epoch > epoch) {
        throw new StaleEpochError(
          epoch,
          current.epoch,
          `Write to ${key} refused: epoch ${current.epoch} wrote it since; this writer (epoch ${epoch}) is stale.`,
          { cause: error },
        );
      }
      throw error;
    }
  }

  /**
   * Deletes a document, only if it is still the version read (`previous`: its ETag and epoch, e.g. from
   * `StateStore.readSummary`). Fenced like a write: refused once this writer's term is over, or when a newer epoch
   * wrote the document. A document already gone is a no-op.
   *
   * @throws StaleEpochError as {@link FencedStateStore.write}; ConcurrentUpdateError when another version is stored.
   */
  async delete(key: string, previous: { etag: string; epoch: number }, options: Abortable = {}): Promise<void> {
    const { epoch } = this.fence;
    this.assertLive(key);
    if (previous.epoch > epoch)
      throw new StaleEpochError(
        epoch,
        previous.epoch,
        `Delete of ${key} refused: it was written by epoch ${previous.epoch}, newer than this writer's ${epoch}.`,
      );
    await this.store.delete(key, { ifMatch: previous.etag }, options);
  }

  /**
   * Read-modify-write with retry on races: `change` gets the current value (undefined if none) and returns the new one,
   * or `undefined` to leave the document as it is.
   *
   * @throws StaleEpochError as {@link FencedStateStore.write}; ConcurrentUpdateError after `maxAttempts` lost races.
   */
  async update<T>(
    key: string,
    parse: (value: unknown) => T,
    change: (current: T | undefined) => T | undefined,
    options: UpdateOptions = {},
  ): Promise<Versioned<T> | undefined> {
    const maxAttempts = options.maxAttempts ?? 5;
    for (let attempt = 1; ; attempt++) {
      const current = await this.read(key, parse, options);
      const next = change(current?.value);
      if (next === undefined) return current;
      try {
        return await this.write(key, next, current, options);
      } catch (error) {
        if (!(error instanceof ConcurrentUpdateError) || attempt >= maxAttempts) throw error;
      }
    }
  }

  private assertLive(key: string): void {
    try {
      this.fence.assertLeader();
    } catch (error) {
      if (!(error instanceof LeadershipLostError)) throw error;
      throw new StaleEpochError(
        this.fence.epoch,
        undefined,
        `Write to ${key} refused: this writer's term (epoch ${this.fence.epoch}) is over (${error.reason}).`,
        { cause: error },
      );
    }
  }
}
