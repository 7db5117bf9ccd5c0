import { LeadershipLostError } from "../errors.js";
import type { LeaderRecord } from "../lease/LeaseStore.js";
import { delay } from "../util/delay.js";
import { withTimeout } from "../util/timeout.js";
import type { ResolvedElectorOptions } from "./options.js";
import { checkRevocation } from "./revocation.js";
import type { Term } from "./Term.js";

/**
 * Keeps a term alive until `stopSignal` fires or the term ends: renews on schedule — counted from the acquire's start,
 * and already while the term's record is being written, so slow storage cannot eat the first renewal's margin —
 * checks the watchdog at each renewal and for revocation once per renew interval, and ends the term the moment its
 * local renew deadline passes — whatever storage is doing, because every request's timeout is capped by the time
 * left to the deadline.
 *
 * Resolves once every loop has stopped, i.e. no renewal or revocation check is in flight (so the caller can release
 * safely, after a step-down was marked honoured).
 */
export async function superviseTerm(
  term: Term,
  leaseId: string,
  options: ResolvedElectorOptions,
  stopSignal: AbortSignal,
): Promise<void> {
  const loopSignal = AbortSignal.any([stopSignal, term.signal]);
  await Promise.all([
    renewLoop(term, leaseId, options, loopSignal),
    watchDeadline(term, loopSignal),
    watchRevocation(term, options, loopSignal),
    options.takeover ? heartbeatLoop(term, leaseId, options, loopSignal) : undefined,
  ]);
}

/**
 * Ends the term with reason "deadline" when its first deadline passes: the local renew deadline, with takeover the
 * takeover one. Arming takeover (the record's write) brings the deadline forward, so it cuts short a sleep begun
 * before: a contender may break `takeoverDeadlineMs` after the last heartbeat, and the task must have heard by then.
 */
async function watchDeadline(term: Term, loopSignal: AbortSignal): Promise<void> {
  const armed = new AbortController();
  void term.untilHeartbeats().then(() => {
    armed.abort();
  });
  while (!loopSignal.aborted) {
    if (term.checkDeadline()) return;
    const wake = isAborted(armed.signal) ? loopSignal : AbortSignal.any([loopSignal, armed.signal]);
    try {
      await delay(term.msToDeadline(), { abortSignal: wake });
    } catch {
      if (isAborted(loopSignal)) return; // stopped; else armed: the deadline moved forward
    }
  }
}

async function renewLoop(
  term: Term,
  leaseId: string,
  options: ResolvedElectorOptions,
  loopSignal: AbortSignal,
): Promise<void> {
  const { clock, store, logger, renewIntervalMs, retryIntervalMs, requestTimeoutMs, instanceId } = options;
  let nextRenewMono = term.acquireStartMono + renewIntervalMs;
  while (!loopSignal.aborted) {
    if (!(await sleepUntil(nextRenewMono, options, loopSignal))) return;
    if (term.checkDeadline()) return;
    if (term.hasBegun && term.isStalled()) {
      term.end("stalled", `the task reported no progress for ${options.stallTimeoutMs ?? 0} ms (watchdog)`);
      return;
    }
    const startMono = clock.monotonicMs();
    const budgetMs = Math.min(requestTimeoutMs, term.msToDeadline());
    try {
      await withTimeout(budgetMs, (abortSignal) => store.renew(leaseId, { abortSignal }), { abortSignal: loopSignal });
      term.renewed(startMono);
      const latencyMs = clock.monotonicMs() - startMono;
      const { epoch } = term;
      logger.verbose(
        `Leader ${instanceId} renewed lease ${store.name} (epoch ${epoch}) in ${Math.round(latencyMs)} ms.`,
        { instanceId, epoch },
      );
      term.emit({ type: "lease-renewed", instanceId, epoch, latencyMs, atMs: clock.wallMs() });
      nextRenewMono = startMono + renewIntervalMs;
    } catch (error) {
      if (isAborted(loopSignal)) return;
      if (error instanceof LeadershipLostError) {
        term.end("lost", "storage refused the renewal: the lease was broken or taken", error);
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      const { epoch } = term;
      logger.warn(
        `Leader ${instanceId} could not renew lease ${store.name} (epoch ${epoch}); retrying until the renew deadline: ${message}`,
        { instanceId, epoch },
      );
      nextRenewMono = clock.monotonicMs() + Math.min(retryIntervalMs, renewIntervalMs);
      continue;
    }
  }
}

/**
 * With takeover: once the term's record is written (its first heartbeat), rewrites it every heartbeat interval — a
 * write under the lease id, which moves the record's version on for contenders to see — counted from each successful
 * heartbeat's start; after a failure, again a quarter interval later, until the takeover deadline ends the term. Each
 * request's timeout is capped by the time left to the deadline. A refusal (the lease was broken or taken) ends the
 * term at once.
 */
async function heartbeatLoop(
  term: Term,
  leaseId: string,
  options: ResolvedElectorOptions,
  loopSignal: AbortSignal,
): Promise<void> {
  const { clock, store, logger, heartbeatIntervalMs, requestTimeoutMs, instanceId } = options;
  const armed = await untilArmed(term, loopSignal);
  if (armed === undefined) return;
  let nextMono = armed.startMono + heartbeatIntervalMs;
  while (!loopSignal.aborted) {
    if (!(await sleepUntil(nextMono, options, loopSignal))) return;
    if (term.checkDeadline()) return;
    const startMono = clock.monotonicMs();
    const budgetMs = Math.min(requestTimeoutMs, term.msToDeadline());
    try {
      await withTimeout(budgetMs, (abortSignal) => store.writeRecord(leaseId, armed.record, { abortSignal }), {
        abortSignal: loopSignal,
      });
      term.heartbeated(startMono);
      nextMono = startMono + heartbeatIntervalMs;
    } catch (error) {
      if (isAborted(loopSignal)) return;
      if (error instanceof LeadershipLostError) {
        term.end("lost", "storage refused the heartbeat: the lease was broken or taken", error);
        return;
      }
      logger.warn(
        `Leader ${instanceId} could not heartbeat on ${store.name} (epoch ${term.epoch}); retrying until the takeover deadline: ${error instanceof Error ? error.message : String(error)}`,
        { instanceId, epoch: term.epoch },
      );
      nextMono = clock.monotonicMs() + heartbeatIntervalMs / 4;
    }
  }
}

/** The term's record and when the heartbeats' schedule starts, once it is armed; undefined if stopped first. */
async function untilArmed(
  term: Term,
  loopSignal: AbortSignal,
): Promise<{ record: LeaderRecord; startMono: number } | undefined> {
  const stopped = new Promise<undefined>((resolve) => {
    if (loopSignal.aborted) resolve(undefined);
    loopSignal.addEventListener(
      "abort",
      () => {
        resolve(undefined);
      },
      { once: true },
    );
  });
  const record = await Promise.race([term.untilHeartbeats(), stopped]);
  return record === undefined ? undefined : { record, startMono: term.takeoverArmedAtMono() };
}

/**
 * Checks for a step-down request once per renew interval while the term runs — on its own schedule, so a slow
 * check never delays a renewal.
 */
async function watchRevocation(term: Term, options: ResolvedElectorOptions, loopSignal: AbortSignal): Promise<void> {
  const { clock, renewIntervalMs } = options;
  let nextCheckMono = term.acquireStartMono + renewIntervalMs;
  while (!loopSignal.aborted) {
    if (!(await sleepUntil(nextCheckMono, options, loopSignal))) return;
    nextCheckMono = clock.monotonicMs() + renewIntervalMs;
    if (term.hasBegun) await checkRevocation(term, options, loopSignal);
  }
}

/** Sleeps until the monotonic time `atMono`; false when the loop was stopped meanwhile. */
async function sleepUntil(
  atMono: number,
  options: Pick<ResolvedElectorOptions, "clock">,
  loopSignal: AbortSignal,
): Promise<boolean> {
  try {
    await delay(atMono - options.clock.monotonicMs(), { abortSignal: loopSignal });
    return true;
  } catch {
    return false;
  }
}

/** Reads `signal.aborted` afresh (after an await, where type narrowing would assume it unchanged). */
function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}
