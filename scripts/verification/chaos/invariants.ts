import type { EventRecord } from "../../../dev/src/local/eventLog";
import type { StateVersion } from "./observer";

/**
 * The invariants of the chaos suite, as pure functions of the event log and the observed stored state (unit-tested
 * in test/chaos/invariants.test.ts).
 *
 * A step is the interval from `step-started` to the `step-completed`/`step-aborted` of the same instance and epoch,
 * or to that instance's `instance-exited` when it died first, or to the end of the run when neither came. The one
 * documented exception is a FROZEN instance (SIGSTOP): it cannot log while frozen, so its step is taken to end at the
 * last moment its term could still write — the last renewal it sent (or its acquisition) plus the renew deadline, and
 * with takeover no later than the takeover deadline the term counted itself (named by its `lease-lost` when it woke;
 * without it, the freeze plus the takeover deadline: its last heartbeat was sent before the freeze), after which the
 * library's `assertLeader()` refuses every write — and the stored state is checked to prove that no write of its
 * epoch landed after it woke.
 */

/**
 * Slack on "sent before the freeze": the harness notes the time it sent SIGSTOP; the process may run a moment longer.
 */
export const FREEZE_SIGNAL_SLACK_MS = 250;

/** A step as an interval of wall-clock time. */
export interface StepInterval {
  instance: string;
  epoch: number;
  startMs: number;
  endMs: number;
  end: "completed" | "aborted" | "exited" | "frozen-deadline" | "open";
}

/** An instance frozen (SIGSTOP) from `fromMs` to `toMs` (SIGCONT). */
export interface FreezeWindow {
  instance: string;
  fromMs: number;
  toMs: number;
}

const ms = (record: EventRecord): number => Date.parse(record.ts);

/** The freezes a log records (its SIGSTOP `chaos-fault` records: from `startTs` to the record's time, the SIGCONT). */
export function freezesInLog(records: readonly EventRecord[]): FreezeWindow[] {
  return records
    .filter(
      (record) => record.type === "chaos-fault" && record.fault === "SIGSTOP" && typeof record.startTs === "string",
    )
    .map((record) => ({ instance: record.instance, fromMs: Date.parse(String(record.startTs)), toMs: ms(record) }));
}

/** The steps of a run (see the module comment for where each ends). */
export function stepIntervals(
  records: readonly EventRecord[],
  options: {
    renewDeadlineMs: number;
    /** With takeover: the leaders' takeover deadline (LEASE_TAKEOVER_DEADLINE_MS). */
    takeoverDeadlineMs?: number;
    endOfRunMs: number;
    freezes?: readonly FreezeWindow[];
  },
): StepInterval[] {
  const sorted = [...records].sort((a, b) => ms(a) - ms(b));
  const intervals: StepInterval[] = [];
  for (const start of sorted) {
    if (start.type !== "step-started" || start.epoch === undefined) continue;
    const startMs = ms(start);
    const same = (record: EventRecord): boolean => record.instance === start.instance && ms(record) >= startMs;
    const ended = sorted.find(
      (record) =>
        same(record) &&
        (record.type === "step-completed" || record.type === "step-aborted") &&
        record.epoch === start.epoch,
    );
    const exited = sorted.find((record) => same(record) && record.type === "instance-exited");
    let interval: StepInterval = {
      instance: start.instance,
      epoch: start.epoch,
      startMs,
      endMs: options.endOfRunMs,
      end: "open",
    };
    if (ended !== undefined)
      interval = { ...interval, endMs: ms(ended), end: ended.type === "step-completed" ? "completed" : "aborted" };
    if (exited !== undefined && ms(exited) < interval.endMs)
      interval = { ...interval, endMs: ms(exited), end: "exited" };
    for (const freeze of options.freezes ?? []) {
      if (freeze.instance !== start.instance || freeze.fromMs >= interval.endMs || freeze.toMs <= startMs) continue;
      const lastProof = termProofBefore(sorted, start.instance, start.epoch, freeze.fromMs) ?? startMs;
      const capMs = Math.min(
        lastProof + options.renewDeadlineMs,
        takeoverCapMs(sorted, start, freeze, options.takeoverDeadlineMs),
      );
      if (capMs < interval.endMs) interval = { ...interval, endMs: capMs, end: "frozen-deadline" };
    }
    intervals.push(interval);
  }
  return intervals;
}

/**
 * With takeover, the latest a frozen term can have acted by its takeover deadline: the deadline it counted itself, as
 * its `lease-lost` names it when it wakes (`takeoverDeadlineAtMs`: its last successful heartbeat's start + the
 * deadline); without that evidence (a log of a version before it, or a process that never woke), the freeze plus
 * {@link FREEZE_SIGNAL_SLACK_MS} plus the deadline, as its last heartbeat was sent before the freeze.
 */
function takeoverCapMs(
  sorted: readonly EventRecord[],
  start: EventRecord,
  freeze: FreezeWindow,
  takeoverDeadlineMs: number | undefined,
): number {
  if (takeoverDeadlineMs === undefined) return Infinity;
  const evidence = sorted.find(
    (record) =>
      record.type === "lease-lost" &&
      record.instance === start.instance &&
      record.epoch === start.epoch &&
      ms(record) >= freeze.fromMs &&
      typeof record.takeoverDeadlineAtMs === "number",
  )?.takeoverDeadlineAtMs;
  return typeof evidence === "number" ? evidence : freeze.fromMs + FREEZE_SIGNAL_SLACK_MS + takeoverDeadlineMs;
}

/**
 * When the last renewal of a term before `beforeMs` was sent (its event time minus its latency), or its acquisition.
 */
function termProofBefore(
  sorted: readonly EventRecord[],
  instance: string,
  epoch: number,
  beforeMs: number,
): number | undefined {
  let proof: number | undefined;
  for (const record of sorted) {
    if (record.instance !== instance || record.epoch !== epoch || ms(record) > beforeMs) continue;
    if (record.type === "lease-acquired") proof = ms(record);
    if (record.type === "lease-renewed")
      proof = ms(record) - (typeof record.latencyMs === "number" ? record.latencyMs : 0);
  }
  return proof;
}

/** Every pair of steps of different terms that overlap in time, described for a person. */
export function overlappingSteps(intervals: readonly StepInterval[]): string[] {
  const found: string[] = [];
  intervals.forEach((a, i) => {
    for (const b of intervals.slice(i + 1)) {
      if (a.instance === b.instance && a.epoch === b.epoch) continue;
      if (a.startMs < b.endMs && b.startMs < a.endMs) {
        const overlapMs = Math.min(a.endMs, b.endMs) - Math.max(a.startMs, b.startMs);
        found.push(
          `${a.instance}@e${a.epoch} (${a.end}) and ${b.instance}@e${b.epoch} (${b.end}) overlap by ${overlapMs} ms`,
        );
      }
    }
  });
  return found;
}

/**
 * The fencing-token rule, checked against the stored state: per document, the epochs of successive versions never
 * decrease (so no write from an older epoch appears after a newer one), and a job's `lastEpoch` equals the epoch in
 * its blob metadata.
 */
export function epochOrderViolations(versions: readonly StateVersion[]): string[] {
  const found: string[] = [];
  const highest = new Map<string, number>();
  for (const version of versions) {
    const before = highest.get(version.key) ?? 0;
    if (version.epoch < before)
      found.push(
        `${version.key}: a version of epoch ${version.epoch} appeared after epoch ${before} (at ${new Date(version.observedAtMs).toISOString()})`,
      );
    highest.set(version.key, Math.max(before, version.epoch));
    if (version.job !== undefined && version.job.lastEpoch !== version.epoch)
      found.push(`${version.key}: lastEpoch ${version.job.lastEpoch} differs from metadata epoch ${version.epoch}`);
  }
  return found;
}

/** Versions written by `epoch` first seen after `afterMs`: a zombie's writes that landed after it woke. */
export function writesOfEpochAfter(versions: readonly StateVersion[], epoch: number, afterMs: number): StateVersion[] {
  return versions.filter((version) => version.epoch === epoch && version.observedAtMs > afterMs);
}

/**
 * A term from the event log: lease-acquired to lease-released / lease-lost, or to the end of its step (a tick leads
 * for one step; once that ended the instance no longer leads, even when storage was down and no release was logged),
 * or to instance-exited.
 */
export interface TermInterval {
  instance: string;
  epoch: number;
  startMs: number;
  endMs: number;
}

/** Every term of the run. */
export function termIntervals(records: readonly EventRecord[], endOfRunMs: number): TermInterval[] {
  const sorted = [...records].sort((a, b) => ms(a) - ms(b));
  return sorted
    .filter((record) => record.type === "lease-acquired" && record.epoch !== undefined)
    .map((start) => {
      const startMs = ms(start);
      const end = sorted.find(
        (record) =>
          record.instance === start.instance &&
          ms(record) >= startMs &&
          ((["lease-released", "lease-lost", "step-completed", "step-aborted"].includes(record.type) &&
            record.epoch === start.epoch) ||
            record.type === "instance-exited"),
      );
      return {
        instance: start.instance,
        epoch: start.epoch ?? 0,
        startMs,
        endMs: end === undefined ? endOfRunMs : ms(end),
      };
    });
}

/**
 * How long after `faultEndMs` a leader existed again: 0 when a term of an unaffected instance was running at that
 * moment, else the time to the next `lease-acquired` by anyone; undefined when none came.
 */
export function leaderAgainAfterMs(
  records: readonly EventRecord[],
  faultEndMs: number,
  affected: ReadonlySet<string>,
  endOfRunMs: number,
): number | undefined {
  const terms = termIntervals(records, endOfRunMs);
  if (terms.some((term) => !affected.has(term.instance) && term.startMs <= faultEndMs && term.endMs > faultEndMs))
    return 0;
  const next = terms.filter((term) => term.startMs >= faultEndMs).sort((a, b) => a.startMs - b.startMs)[0];
  return next === undefined ? undefined : next.startMs - faultEndMs;
}

/**
 * Takeovers: terms that began after a contender broke the previous holder's lease because it had fallen silent
 * (their `lease-acquired` names who broke it).
 */
export function takeoversByBreak(records: readonly EventRecord[]): EventRecord[] {
  return records.filter(
    (record) => record.type === "lease-acquired" && typeof record.brokenBy === "string" && record.brokenBy !== "",
  );
}

/** Terms' epochs in the order they began: each must exceed the one before. */
export function epochsNotIncreasing(records: readonly EventRecord[]): string[] {
  const acquired = [...records].filter((record) => record.type === "lease-acquired").sort((a, b) => ms(a) - ms(b));
  const found: string[] = [];
  for (let index = 1; index < acquired.length; index++) {
    const previous = acquired[index - 1]?.epoch ?? 0;
    const current = acquired[index]?.epoch ?? 0;
    if (current <= previous) found.push(`term of epoch ${current} began after a term of epoch ${previous}`);
  }
  return found;
}
