import type { Side } from "../hostProcess";
import { measuredRow, type Row } from "../rows";
import { onBothSides, round, type Scenario } from "../scenario";
import { holdsLock, lockRows, measureLock, type LockUse } from "../lockMeasure";
import {
  lockTarget,
  MIN_VALUE_MS,
  readStatusBlob,
  statusInstants,
  statusRequests,
  isInvocationTime,
} from "../timerStatus";
import { waitUntil, type World } from "../world";

/**
 * The timer's schedule: an NCRONTAB schedule every 2 s on two hosts of one app for 20 s (one fires; the listener lock's
 * lease, renewals and polls at the SDK's shortest periods, 15 s and 15 s); an invocation longer than the interval; and
 * `runOnStartup` on a schedule that fires once a year, which keeps the schedule monitor on.
 */

const EVERY_2_S = "*/2 * * * * *";
const YEARLY = "0 0 0 1 1 *";

const LOCK = { periodS: 15, recoveryS: 15 };
/** Long enough for a renewal gap (7.5 s) and a poll gap (15 s). */
const TWO_HOSTS_MS = 20_000;

interface ScheduleResult {
  lock: LockUse;
  /** Starts of each host. */
  startsPerHost: number[];
  /** ms after the even second each invocation started. */
  offsetsMs: number[];
  isPastDue: boolean[];
  statusNull: boolean[];
}

async function scheduleSide(world: World, side: Side): Promise<ScheduleResult> {
  const hostId = world.unique(`sched-${side}`);
  const spec = {
    hostId,
    functions: ["Tick"] as const,
    schedule: EVERY_2_S,
    // The shortest periods the SDK accepts.
    singleton: LOCK,
  };
  const hosts = await Promise.all([world.start(side, spec, `${hostId}-a`), world.start(side, spec, `${hostId}-b`)]);
  await new Promise((done) => setTimeout(done, TWO_HOSTS_MS));
  const endMs = Date.now();
  await Promise.all(hosts.map((host) => world.stop(host)));
  const target = lockTarget(hostId, "Tick");
  const [a, b] = hosts;
  const lock = holdsLock(a, target)
    ? measureLock(a, b, target, endMs, LOCK.recoveryS)
    : measureLock(b, a, target, endMs, LOCK.recoveryS);
  const starts = hosts.flatMap((host) => host.invocations.filter((record) => record.phase === "start"));
  return {
    lock,
    startsPerHost: hosts.map((host) => host.invocations.filter((record) => record.phase === "start").length),
    offsetsMs: starts.map((record) => record.atMs % 2000),
    isPastDue: [...new Set(starts.map((record) => record.isPastDue === true))],
    statusNull: [...new Set(starts.map((record) => record.scheduleStatus === null))],
  };
}

/** Seconds from the end of each invocation to the start of the next, for invocations longer than the interval. */
async function overrunSide(world: World, side: Side): Promise<number[]> {
  const hostId = world.unique(`overrun-${side}`);
  const host = await world.start(side, { hostId, functions: ["Tick"], schedule: EVERY_2_S, tickWorkMs: 3000 });
  await waitUntil(() => host.invocations.filter((record) => record.phase === "start").length >= 4, 30_000);
  await world.stop(host);
  const records = host.invocations;
  const gaps: number[] = [];
  for (let index = 0; index + 1 < records.length; index++) {
    const end = records[index];
    const next = records[index + 1];
    if (end?.phase === "end" && next?.phase === "start") gaps.push(round((next.atMs - end.atMs) / 1000));
  }
  return gaps;
}

interface StartupResult {
  invocations: number;
  /** Seconds from the host's ready line to the invocation. */
  afterReadyS: number | null;
  isPastDue: boolean | null;
  /** The Timer object's status: is Last .NET's MinValue, is Next the schedule's next occurrence. */
  status: { lastIsMinValue: boolean; nextIsNextOccurrence: boolean; lastUpdatedIsMinValue: boolean } | null;
  /** The status blob afterwards: Last = the invocation (±2 s), Next = the next occurrence. */
  blob: { lastIsInvocation: boolean; nextIsNextOccurrence: boolean } | null;
  statusRequests: string[];
}

function nextNewYearMs(fromMs: number): number {
  const year = new Date(fromMs).getUTCFullYear() + 1;
  return Date.UTC(year, 0, 1);
}

async function startupSide(world: World, side: Side): Promise<StartupResult> {
  const hostId = world.unique(`startup-${side}`);
  const host = await world.start(side, { hostId, functions: ["TickStartup"], schedule: YEARLY });
  const readyMs = Date.now();
  await waitUntil(() => host.invocations.some((record) => record.phase === "end"), 15_000);
  // The status update follows the invocation.
  await waitUntil(
    async () => (await readStatusBlob(world.blobs, hostId, "TickStartup"))?.lastMs !== MIN_VALUE_MS,
    5000,
  );
  await new Promise((done) => setTimeout(done, 1000));
  await world.stop(host);
  const start = host.invocations.find((record) => record.phase === "start");
  const status = statusInstants(start?.scheduleStatus);
  const blob = await readStatusBlob(world.blobs, hostId, "TickStartup");
  const next = nextNewYearMs(start?.atMs ?? Date.now());
  return {
    invocations: host.invocations.filter((record) => record.phase === "start").length,
    afterReadyS: start === undefined ? null : round((start.atMs - readyMs) / 1000, 1),
    isPastDue: start?.isPastDue ?? null,
    status:
      status === null
        ? null
        : {
            lastIsMinValue: status.lastMs === MIN_VALUE_MS,
            nextIsNextOccurrence: status.nextMs === next,
            lastUpdatedIsMinValue: status.lastUpdatedMs === MIN_VALUE_MS,
          },
    blob:
      blob === null
        ? null
        : {
            lastIsInvocation: isInvocationTime(blob.lastMs, start?.atMs ?? 0),
            nextIsNextOccurrence: blob.nextMs === next,
          },
    statusRequests: statusRequests(host.requests(), hostId, "TickStartup"),
  };
}

async function run(world: World): Promise<Row[]> {
  const [schedule, overrun, startup] = await Promise.all([
    onBothSides((side) => scheduleSide(world, side)),
    onBothSides((side) => overrunSide(world, side)),
    onBothSides((side) => startupSide(world, side)),
  ]);
  // On time, but a loaded machine makes a host's timer late now and then (the SDK's first, JIT-compiled, most).
  const fires = (result: ScheduleResult): boolean =>
    result.offsetsMs.length >= 5 && median(result.offsetsMs) < 300 && result.offsetsMs.every((offset) => offset < 1500);
  const oneFires = (result: ScheduleResult): boolean => result.startsPerHost.filter((count) => count > 0).length === 1;
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
  const same = (pick: (result: StartupResult) => unknown): boolean =>
    JSON.stringify(pick(startup.sdk)) === JSON.stringify(pick(startup.local));
  return [
    measuredRow(
      "timer.occurrences",
      "A timer fires at each occurrence of its NCRONTAB schedule (seconds first)",
      { offsetsMs: schedule.sdk.offsetsMs },
      { offsetsMs: schedule.local.offsetsMs },
      fires(schedule.sdk) && fires(schedule.local),
      "both: at least 5 invocations, a median under 300 ms after its occurrence (an even second), none 1.5 s late",
    ),
    measuredRow(
      "timer.one-instance-per-app",
      "Two hosts of one app (one host id): only the listener lock's holder fires the timer",
      { startsPerHost: schedule.sdk.startsPerHost },
      { startsPerHost: schedule.local.startsPerHost },
      oneFires(schedule.sdk) && oneFires(schedule.local),
      "both: invocations on exactly one of the two hosts",
    ),
    ...lockRows({ sdk: schedule.sdk.lock, local: schedule.local.lock }, LOCK.periodS, LOCK.recoveryS),
    measuredRow(
      "timer.monitor-off",
      "A schedule that fires more than once a minute runs without the schedule monitor: isPastDue false, scheduleStatus null",
      { isPastDue: schedule.sdk.isPastDue, scheduleStatusNull: schedule.sdk.statusNull },
      { isPastDue: schedule.local.isPastDue, scheduleStatusNull: schedule.local.statusNull },
      JSON.stringify([schedule.sdk.isPastDue, schedule.sdk.statusNull]) ===
        JSON.stringify([schedule.local.isPastDue, schedule.local.statusNull]),
      "isPastDue and whether scheduleStatus is null, over every invocation, equal on both",
    ),
    measuredRow(
      "timer.overrun",
      "An invocation longer than the interval: invocations never overlap, and the next starts as soon as it ends (its occurrence was computed from the previous start)",
      { endToNextStartS: overrun.sdk },
      { endToNextStartS: overrun.local },
      overrun.sdk.length >= 2 &&
        overrun.local.length >= 2 &&
        Math.abs(median(overrun.sdk) - median(overrun.local)) <= 0.3 &&
        [...overrun.sdk, ...overrun.local].every((gap) => gap >= 0),
      "the median gap from an invocation's end to the next start, equal within 0.3 s; none negative (no overlap)",
    ),
    measuredRow(
      "timer.run-on-startup",
      "runOnStartup fires once when the listener starts; with the monitor on (a yearly schedule) the Timer object carries the stored status (Last and LastUpdated at .NET's MinValue, Next the next occurrence)",
      { invocations: startup.sdk.invocations, isPastDue: startup.sdk.isPastDue, status: startup.sdk.status },
      { invocations: startup.local.invocations, isPastDue: startup.local.isPastDue, status: startup.local.status },
      same((result) => [result.invocations, result.isPastDue, result.status]) &&
        [startup.sdk, startup.local].every((result) => (result.afterReadyS ?? 99) < 5),
      "the invocation count, isPastDue and the status's instants equal on both; each within 5 s of the host's start",
    ),
    measuredRow(
      "timer.status-blob",
      "With the monitor on, the status is kept in azure-webjobs-hosts/timers/{hostId}/Host.Functions.{name}/status: Last the invocation, Next the next occurrence; written after each invocation",
      { blob: startup.sdk.blob, requests: startup.sdk.statusRequests },
      { blob: startup.local.blob, requests: startup.local.statusRequests },
      same((result) => [result.blob, result.statusRequests]),
      "the blob's instants and the requests to it (method, status, in order), equal on both",
    ),
  ];
}

export const timerScheduleScenario: Scenario = { name: "timer-schedule", quick: true, run };
