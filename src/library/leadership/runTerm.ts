import { ConfigurationError, LeadershipLostError, StaleEpochError } from "../errors.js";
import type { LeaderRecord } from "../lease/LeaseStore.js";
import { withTimeout } from "../util/timeout.js";
import type { EpochClaim, ResolvedElectorOptions } from "./options.js";
import { checkRevocation } from "./revocation.js";
import { superviseTerm } from "./superviseTerm.js";
import type { LeadershipTerm, Term } from "./Term.js";

/** The leader's work: runs once per term; must stop when `term.signal` fires. */
export type LeaderTask<T> = (term: LeadershipTerm) => Promise<T>;

/** How an attempt to lead ended. Losing the race is a value, not an exception. */
export type LeadResult<T> =
  /**
   * Someone else leads (`leader` says who, when known), or this elector already has an attempt or a term in progress.
   */
  | { outcome: "not-acquired"; leader: LeaderRecord | undefined }
  /** This instance led for one term and the task finished while leadership held. */
  | { outcome: "completed"; epoch: number; value: T }
  /** This instance led, but leadership ended before the task did; `error` is what the task threw, if anything. */
  | { outcome: "aborted"; epoch: number; reason: LeadershipLostError["reason"]; error: unknown };

/**
 * Runs one term on a freshly acquired lease (`leaseId`, which only this term renews with): supervision (renewals,
 * deadline) starts at once, then the record with the next epoch is written (`term.record`), then the task runs. The one
 * `finally` stops renewing and waits for any renewal in flight; the caller then gives the lease back, unless storage
 * said it is no longer ours (`term.endReason` "lost"). A lease lost before the record was written is "not-acquired".
 */
export async function runTerm<T>(
  term: Term,
  leaseId: string,
  task: LeaderTask<T>,
  options: ResolvedElectorOptions,
  abortSignal: AbortSignal | undefined,
): Promise<LeadResult<T>> {
  const stop = new AbortController();
  const supervision = superviseTerm(term, leaseId, options, stop.signal);
  try {
    try {
      await beginTerm(term, leaseId, options, abortSignal);
    } catch (error) {
      if (error instanceof LeadershipLostError && !abortSignal?.aborted)
        return { outcome: "not-acquired", leader: undefined };
      throw error;
    }
    return await runTask(term, task, abortSignal);
  } finally {
    stop.abort();
    await supervision;
  }
}

/**
 * Reads the record (and the epoch floor) under the lease, writes the next epoch, begins the term, and checks at once
 * for a step-down request that binds it.
 */
async function beginTerm(
  term: Term,
  leaseId: string,
  options: ResolvedElectorOptions,
  abortSignal: AbortSignal | undefined,
): Promise<void> {
  const { store, clock, instanceId, requestTimeoutMs, readEpochFloor, claimEpoch, logger, leaseDurationS } = options;
  const signal = abortSignal === undefined ? term.signal : AbortSignal.any([abortSignal, term.signal]);
  const request = <R>(operation: (signal: AbortSignal) => Promise<R>): Promise<R> =>
    withTimeout(requestTimeoutMs, operation, { abortSignal: signal });
  // Read again now that we hold the lease: only the holder can write the record, so it cannot change under us.
  const [{ record: previous }, floor] = await Promise.all([
    request((s) => store.read({ abortSignal: s })),
    readEpochFloor === undefined ? 0 : request((s) => readEpochFloor({ abortSignal: s })).then(checkFloor),
  ]);
  const epoch = Math.max(previous.epoch, floor) + 1;
  const record: LeaderRecord = {
    holder: instanceId,
    epoch,
    sinceMs: clock.wallMs(),
    transitions: previous.transitions + 1,
    // Contenders count this holder's own deadline, so electors with other settings (a rolling deploy) stay safe.
    ...(options.takeover ? { takeoverDeadlineMs: options.takeoverDeadlineMs } : {}),
  };
  const writeStartMono = clock.monotonicMs();
  await request((s) => store.writeRecord(leaseId, record, { abortSignal: s }));
  // The record write is the first heartbeat: from here on the term also stops when it falls silent.
  if (options.takeover) term.armTakeover(record, writeStartMono);
  if (claimEpoch !== undefined) {
    const claim: EpochClaim = {
      instanceId,
      epoch,
      startedAtMs: record.sinceMs,
      // The term's own check: the claim's store calls the term, not back into this module.
      assertLeader: term.assertLeader.bind(term),
    };
    try {
      await request((s) => claimEpoch(claim, { abortSignal: s, logger }));
    } catch (error) {
      // Another term stored this epoch first: this one never begins (the caller releases the lease).
      if (error instanceof StaleEpochError)
        throw new LeadershipLostError(
          "lost",
          epoch,
          `Instance ${instanceId} did not begin a term with epoch ${epoch}: ${error.message}`,
          { cause: error },
        );
      throw error;
    }
  }
  term.begin(record, previous.epoch, previous.brokenBy !== undefined);
  const { brokenBy } = previous;
  logger.info(`Instance ${instanceId} leads ${store.name} with epoch ${epoch} (lease ${leaseDurationS} s).`, {
    instanceId,
    epoch,
  });
  term.emit({
    type: "lease-acquired",
    instanceId,
    epoch,
    previousHolder: previous.holder,
    transitions: record.transitions,
    ...(brokenBy === undefined ? {} : { brokenBy }),
    previousEnd: term.previousEnd,
    atMs: record.sinceMs,
  });
  await checkRevocation(term, options, signal);
}

/** Runs the task; the caller's signal ends the term with reason "shutdown". */
async function runTask<T>(
  term: Term,
  task: LeaderTask<T>,
  abortSignal: AbortSignal | undefined,
): Promise<LeadResult<T>> {
  const { epoch } = term;
  const early = term.endReason;
  // e.g. revoked at once
  if (early !== undefined) return { outcome: "aborted", epoch, reason: early, error: undefined };
  const onShutdown = (): void => {
    term.end("shutdown", "the caller's abort signal fired");
  };
  if (abortSignal?.aborted) onShutdown();
  abortSignal?.addEventListener("abort", onShutdown, { once: true });
  try {
    const value = await task(term);
    // A task may return after the renew deadline passed unseen (the process was frozen, no timer ran): the lease may
    // be another's by now, so the term did not complete. Checked on the clock, now.
    term.checkDeadline();
    const reason = term.endReason;
    return reason === undefined
      ? { outcome: "completed", epoch, value }
      : { outcome: "aborted", epoch, reason, error: undefined };
  } catch (error) {
    const reason = term.endReason;
    if (reason === undefined) throw error;
    return { outcome: "aborted", epoch, reason, error };
  } finally {
    abortSignal?.removeEventListener("abort", onShutdown);
  }
}

function checkFloor(floor: number): number {
  if (Number.isSafeInteger(floor) && floor >= 0) return floor;
  throw new ConfigurationError(
    `readEpochFloor returned ${String(floor)}; it must resolve to a whole number ≥ 0 (the highest epoch already stored).`,
  );
}
