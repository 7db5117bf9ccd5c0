import { delay, type Abortable } from "../../src/library/util/delay";
import type {
  AcquireResult,
  BreakOutcome,
  LeaderRecord,
  LeaseSnapshot,
  LeaseStore,
  Revocation,
} from "../../src/library/lease/LeaseStore";

/** Which requests of a {@link LeaseStoreView} a timing applies to (every one when absent). */
type Operation = keyof Omit<LeaseStore, "name">;

/**
 * One process's way to a shared lease store (the fake, or Azurite's), for tests of several instances in one process:
 * each view has its own network. `landAfterMs` delays when a request takes effect in storage, `answerAfterMs` how long
 * its answer then takes to come back (an abort meanwhile loses the answer, not the effect), both per operation when
 * `only` names some; `cut` makes every request from now on never land nor answer until aborted (the process died, or
 * lost its network).
 */
export class LeaseStoreView implements LeaseStore {
  readonly name: string;
  cut = false;
  landAfterMs = 0;
  answerAfterMs = 0;
  /** Operations the two timings apply to; all when undefined. */
  only: readonly Operation[] | undefined;

  constructor(private readonly store: LeaseStore) {
    this.name = store.name;
  }

  ensureExists(options?: Abortable): Promise<void> {
    return this.via("ensureExists", (o) => this.store.ensureExists(o), options);
  }
  acquire(leaseId: string, durationS: number, options?: Abortable): Promise<AcquireResult> {
    return this.via("acquire", (o) => this.store.acquire(leaseId, durationS, o), options);
  }
  renew(leaseId: string, options?: Abortable): Promise<void> {
    return this.via("renew", (o) => this.store.renew(leaseId, o), options);
  }
  release(leaseId: string, options?: Abortable): Promise<void> {
    return this.via("release", (o) => this.store.release(leaseId, o), options);
  }
  breakLease(breakPeriodS: number, options?: Abortable): Promise<void> {
    return this.via("breakLease", (o) => this.store.breakLease(breakPeriodS, o), options);
  }
  breakIfUnchanged(version: string, record: LeaderRecord, options?: Abortable): Promise<BreakOutcome> {
    return this.via("breakIfUnchanged", (o) => this.store.breakIfUnchanged(version, record, o), options);
  }
  read(options?: Abortable): Promise<LeaseSnapshot> {
    return this.via("read", (o) => this.store.read(o), options);
  }
  writeRecord(leaseId: string, record: LeaderRecord, options?: Abortable): Promise<void> {
    return this.via("writeRecord", (o) => this.store.writeRecord(leaseId, record, o), options);
  }
  readRevocation(options?: Abortable): Promise<Revocation | undefined> {
    return this.via("readRevocation", (o) => this.store.readRevocation(o), options);
  }
  revoke(epoch: number, options?: Abortable): Promise<void> {
    return this.via("revoke", (o) => this.store.revoke(epoch, o), options);
  }
  honourRevocation(epoch: number, options?: Abortable): Promise<void> {
    return this.via("honourRevocation", (o) => this.store.honourRevocation(epoch, o), options);
  }

  private async via<T>(
    operation: Operation,
    send: (options: Abortable) => Promise<T>,
    options?: Abortable,
  ): Promise<T> {
    const abortSignal = options?.abortSignal;
    abortSignal?.throwIfAborted();
    if (this.cut) return untilAborted(abortSignal);
    const timed = this.only === undefined || this.only.includes(operation);
    if (timed && this.landAfterMs > 0) await delay(this.landAfterMs, { abortSignal });
    if (this.isCut()) return untilAborted(abortSignal); // cut off with this request on its way: it never lands
    const result = await send({}); // lands now: an abort after this loses only the answer
    if (timed && this.answerAfterMs > 0) await delay(this.answerAfterMs, { abortSignal });
    return result;
  }

  /** Reads `cut` afresh (after an await, where type narrowing would assume it unchanged). */
  private isCut(): boolean {
    return this.cut;
  }
}

/** Never resolves; rejects with the signal's reason when it fires. */
function untilAborted<T>(abortSignal: AbortSignal | undefined): Promise<T> {
  return new Promise<T>((_resolve, reject) => {
    abortSignal?.addEventListener(
      "abort",
      () => {
        reject(abortSignal.reason instanceof Error ? abortSignal.reason : new Error("aborted"));
      },
      { once: true },
    );
  });
}
