import { LeadershipLostError, StorageError } from "../../src/library/errors";
import { delay } from "../../src/library/util/delay";
import {
  EMPTY_RECORD,
  type AcquireResult,
  type BreakOutcome,
  type LeaderRecord,
  type LeaseSnapshot,
  type HonourOptions,
  type LeaseStore,
  type Revocation,
} from "../../src/library/lease/LeaseStore";
import type { Abortable } from "../../src/library/util/delay";

/**
 * In-memory lease with Azure's semantics (expiry on `now()`; a request under another lease id is refused as Azure's
 * 409/412 is, with a `LeadershipLostError`), for unit tests with fake timers. `mode` simulates storage trouble: "down"
 * fails every request at once, "hang" never answers until aborted; `latencyMs` makes every request take that long (it
 * takes effect when it reaches storage, at the end of the wait).
 */
export class FakeLeaseStore implements LeaseStore {
  readonly name = "leases/fake";
  mode: "up" | "down" | "hang" = "up";
  latencyMs = 0;
  record: LeaderRecord = EMPTY_RECORD;
  revocation: Revocation | undefined;
  leaseId: string | undefined;
  expiresAtMs = 0;
  durationS = 0;
  /** Bumped by every record write (a term's record, a heartbeat, a takeover's mark), as the blob's ETag changes. */
  versionCounter = 1;
  /** How the last lease ended, for `read`'s state once nobody holds it: Azure says "available" only after a release. */
  private lastEnd: "released" | "broken" = "released";
  readonly calls: string[] = [];

  constructor(private readonly now: () => number = () => Date.now()) {}

  /** Who holds the lease now (expiry applied). */
  holderLeaseId(): string | undefined {
    return this.leaseId !== undefined && this.now() < this.expiresAtMs ? this.leaseId : undefined;
  }

  ensureExists(options?: Abortable): Promise<void> {
    return this.op("ensureExists", options, () => undefined);
  }

  acquire(leaseId: string, durationS: number, options?: Abortable): Promise<AcquireResult> {
    return this.op("acquire", options, () => {
      const holder = this.holderLeaseId();
      if (holder !== undefined && holder !== leaseId) return { acquired: false };
      this.leaseId = leaseId;
      this.durationS = durationS;
      this.expiresAtMs = this.now() + durationS * 1000;
      return { acquired: true };
    });
  }

  renew(leaseId: string, options?: Abortable): Promise<void> {
    return this.op("renew", options, () => {
      if (this.holderLeaseId() !== leaseId)
        throw new LeadershipLostError("lost", 0, "409 LeaseIdMismatchWithLeaseOperation");
      this.expiresAtMs = this.now() + this.durationS * 1000;
    });
  }

  release(leaseId: string, options?: Abortable): Promise<void> {
    return this.op("release", options, () => {
      if (this.holderLeaseId() !== leaseId) return;
      this.leaseId = undefined;
      this.lastEnd = "released";
    });
  }

  breakLease(_breakPeriodS: number, options?: Abortable): Promise<void> {
    return this.op("breakLease", options, () => {
      if (this.leaseId !== undefined) this.lastEnd = "broken";
      this.leaseId = undefined;
    });
  }

  breakIfUnchanged(version: string, record: LeaderRecord, options?: Abortable): Promise<BreakOutcome> {
    return this.op("breakIfUnchanged", options, (): BreakOutcome => {
      if (this.version !== version) return "changed";
      // Azure's 409 LeaseNotPresentWithLeaseOperation: given back (a release leaves the version as it was).
      if (this.leaseId === undefined) return "not-held";
      // The mark is a write to the broken lease's blob, after which Azurite reads the lease as available again.
      this.lastEnd = "released";
      this.leaseId = undefined;
      this.record = record;
      this.versionCounter++;
      return "broken";
    });
  }

  /** The record's current version (the blob's ETag). */
  get version(): string {
    return `v${this.versionCounter}`;
  }

  read(options?: Abortable): Promise<LeaseSnapshot> {
    return this.op("read", options, () => ({
      state:
        this.holderLeaseId() !== undefined
          ? "leased"
          : this.leaseId !== undefined
            ? "expired"
            : this.lastEnd === "broken"
              ? "broken"
              : "available",
      record: this.record,
      version: this.version,
    }));
  }

  writeRecord(leaseId: string, record: LeaderRecord, options?: Abortable): Promise<void> {
    return this.op("writeRecord", options, () => {
      if (this.holderLeaseId() !== leaseId)
        throw new LeadershipLostError("lost", record.epoch, "412 LeaseIdMismatchWithBlobOperation");
      this.record = record;
      this.versionCounter++;
    });
  }

  readRevocation(options?: Abortable): Promise<Revocation | undefined> {
    return this.op("readRevocation", options, () =>
      this.revocation === undefined ? undefined : { ...this.revocation },
    );
  }

  private requests = 0;

  revoke(epoch: number, options?: Abortable): Promise<void> {
    return this.op("revoke", options, () => {
      this.revocation = { epoch, honoured: false, requestId: `request-${++this.requests}` };
    });
  }

  honourRevocation(epoch: number, options?: HonourOptions): Promise<void> {
    return this.op("honourRevocation", options, () => {
      const current = this.revocation;
      if (current?.epoch !== epoch) return;
      if (options?.requestId !== undefined && current.requestId !== options.requestId) return;
      this.revocation = { ...current, honoured: true };
    });
  }

  private op<T>(name: string, options: Abortable | undefined, body: () => T): Promise<T> {
    this.calls.push(name);
    const signal = options?.abortSignal;
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (this.mode === "down")
      return Promise.reject(new StorageError("StorageUnavailable", undefined, "connect ECONNREFUSED (fake)"));
    if (this.mode === "hang") {
      return new Promise((_resolve, reject) => {
        signal?.addEventListener("abort", () => {
          reject(signal.reason as Error);
        });
      });
    }
    if (this.latencyMs > 0) return delay(this.latencyMs, { abortSignal: signal }).then(body);
    try {
      return Promise.resolve(body());
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }
}

/** A fake lease held by another instance ("other-1", epoch 7) for the next 15 s of `Date.now()`. */
export function heldByOther(): FakeLeaseStore {
  const store = new FakeLeaseStore();
  store.leaseId = "other-lease";
  store.expiresAtMs = Date.now() + 15_000;
  store.durationS = 15;
  store.record = { holder: "other-1", epoch: 7, sinceMs: Date.now(), transitions: 7 };
  return store;
}
