import type { Side } from "./hostProcess";
import { measuredRow, type Row } from "./rows";
import { round } from "./scenario";
import type { RunningHost } from "./world";

/**
 * The timer's listener lock as two hosts of one app use it, read from their requests to the lock blob: which blob,
 * what lease, how often the holder renews, how often the other polls and what one poll sends.
 */

/** One request to the lock blob. */
export interface LockRequest {
  atMs: number;
  /** The lease action (acquire, renew, release) or the method (HEAD, PUT). */
  action: string;
  status: number;
  durationS: number | null;
}

/** The lock as one side's two hosts used it. */
export interface LockUse {
  target: string | null;
  acquireDurationS: (number | null)[];
  /** Seconds between the holder's renewals. */
  renewGapsS: number[];
  /** Seconds between the other host's polls, and the requests of one poll once the lock is held. */
  pollGapsS: number[];
  pollRequests: string[];
}

export function lockRequests(host: RunningHost, target: string, beforeMs = Number.MAX_VALUE): LockRequest[] {
  return host
    .requests()
    .filter((request) => request.target === target && request.atMs < beforeMs)
    .map((request) => ({
      atMs: request.atMs,
      action: request.leaseAction ?? `${request.method}${request.comp === "" ? "" : ` ${request.comp}`}`,
      status: request.status,
      durationS: request.leaseDurationS ?? null,
    }));
}

/** True once `host` has acquired the lock. */
export function holdsLock(host: RunningHost, target: string): boolean {
  return lockRequests(host, target).some((request) => request.action === "acquire" && request.status === 201);
}

/** A non-holder's requests grouped into polls: a pause of more than half the polling interval starts the next. */
function pollsOf(requests: readonly LockRequest[], recoveryMs: number): LockRequest[][] {
  const polls: LockRequest[][] = [];
  for (const request of requests) {
    const current = polls.at(-1);
    const previous = current?.at(-1);
    if (current === undefined || previous === undefined || request.atMs - previous.atMs > recoveryMs / 2)
      polls.push([request]);
    else current.push(request);
  }
  return polls;
}

export const gapsS = (times: number[]): number[] =>
  times.slice(1).map((atMs, index) => round((atMs - (times[index] ?? atMs)) / 1000, 1));

/** How `holder` and `other` used the lock `target` before `beforeMs`, the other polling every `recoveryS`. */
export function measureLock(
  holder: RunningHost,
  other: RunningHost,
  target: string,
  beforeMs: number,
  recoveryS: number,
): LockUse {
  const held = lockRequests(holder, target, beforeMs);
  const polled = lockRequests(other, target, beforeMs);
  const polls = pollsOf(polled, recoveryS * 1000);
  return {
    target: held.length > 0 ? target : null,
    acquireDurationS: [
      ...new Set([...held, ...polled].filter((request) => request.action === "acquire").map((r) => r.durationS)),
    ],
    renewGapsS: gapsS(held.filter((request) => request.action === "renew").map((request) => request.atMs)),
    pollGapsS: gapsS(polls.map((poll) => poll[0]?.atMs ?? 0)),
    // A poll once the lock is held (the first one, at start, may also create the blob).
    pollRequests: (polls[1] ?? []).map((request) => `${request.action} ${request.status}`),
  };
}

/** The rows of the lock: its blob and lease, the renewals, the polls. */
export function lockRows(result: Record<Side, LockUse>, periodS: number, recoveryS: number): Row[] {
  // Never sooner than the period (a second's leeway), and not much later: a host's timer, on a loaded machine, is late.
  const cadence = (values: number[], expected: number): boolean =>
    values.length > 0 && values.every((value) => value >= expected - 1 && value <= expected * 1.5);
  return [
    measuredRow(
      "lock.blob",
      `The timer's listener lock is a blob lease on azure-webjobs-hosts/locks/{hostId}/Host.Functions.{name}.Listener, of listenerLockPeriod (${periodS} s)`,
      { target: result.sdk.target, durationS: result.sdk.acquireDurationS },
      { target: result.local.target, durationS: result.local.acquireDurationS },
      result.sdk.target !== null &&
        result.local.target !== null &&
        JSON.stringify(result.sdk.acquireDurationS) === JSON.stringify(result.local.acquireDurationS),
      "the leased blob (each side's host id) and the lease durations acquired, equal on both",
    ),
    measuredRow(
      "lock.renewal",
      `The holder renews the lease every half period (${periodS / 2} s)`,
      result.sdk.renewGapsS,
      result.local.renewGapsS,
      cadence(result.sdk.renewGapsS, periodS / 2) && cadence(result.local.renewGapsS, periodS / 2),
      `both: every gap between renewals from ${periodS / 2 - 1} to ${periodS * 0.75} s`,
    ),
    measuredRow(
      "lock.polling",
      `The other hosts poll the lock every listenerLockRecoveryPollingInterval (${recoveryS} s): one read of the lease's state, an acquire only when it is free`,
      { gapsS: result.sdk.pollGapsS, onePoll: result.sdk.pollRequests },
      { gapsS: result.local.pollGapsS, onePoll: result.local.pollRequests },
      cadence(result.sdk.pollGapsS, recoveryS) &&
        cadence(result.local.pollGapsS, recoveryS) &&
        JSON.stringify(result.sdk.pollRequests) === JSON.stringify(result.local.pollRequests),
      `both: polls from ${recoveryS - 1} to ${recoveryS * 1.5} s apart; the requests of one poll equal`,
    ),
  ];
}
