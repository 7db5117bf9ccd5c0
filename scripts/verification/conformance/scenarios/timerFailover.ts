import type { Side } from "../hostProcess";
import { measuredRow, type Row } from "../rows";
import { onBothSides, round, type Scenario } from "../scenario";
import { holdsLock, lockRequests } from "../lockMeasure";
import { dailyAt, lockTarget, pastDueFacts, readStatusBlob, type PastDueFacts } from "../timerStatus";
import { waitUntil, type World } from "../world";

/**
 * A failover through the timer's listener lock, with the hosts' default periods (60 s lease, 60 s recovery polling).
 * Two hosts of one app run a timer whose schedule fires once a day, at a moment T chosen a little after they start (so
 * the schedule monitor is on, and the status blob records T as the next occurrence). The lock's holder is SIGKILLed
 * 2 s before T; the survivor takes the lock once the dead holder's lease has run out and its own recovery poll comes —
 * after T, so the occurrence at T was missed. Measured: when the survivor took the lock, when it fired, what the Timer
 * object said, and the status blob afterwards. Full run only (a few minutes of waiting on the lease).
 */

const KILL_BEFORE_T_MS = 2000;
/** The hosts' listener lock defaults, s. */
const PERIOD_S = 60;
const RECOVERY_S = 60;

interface SideResult extends PastDueFacts {
  /** Seconds from the kill to the survivor's acquire of the lock, and to its first invocation. */
  acquireAfterKillS: number | null;
  firedAfterKillS: number | null;
  firedAfterAcquireS: number | null;
}

async function runSide(world: World, side: Side): Promise<SideResult> {
  const hostId = world.unique(`failover-${side}`);
  // Long enough before T for both hosts to start.
  const leadMs = 45_000;
  const tMs = Math.ceil((Date.now() + leadMs) / 1000) * 1000;
  const spec = {
    hostId,
    functions: ["Tick"] as const,
    schedule: dailyAt(tMs),
  };
  const hosts = await Promise.all([world.start(side, spec, `${hostId}-a`), world.start(side, spec, `${hostId}-b`)]);
  const target = lockTarget(hostId, "Tick");
  await waitUntil(() => hosts.some((host) => holdsLock(host, target)), 30_000);
  const holder = hosts.find((host) => holdsLock(host, target));
  const survivor = hosts.find((host) => host !== holder);
  if (holder === undefined || survivor === undefined) throw new Error(`${side}: no host took the lock ${target}`);
  await new Promise((done) => setTimeout(done, Math.max(0, tMs - KILL_BEFORE_T_MS - Date.now())));
  const killMs = Date.now();
  holder.kill();
  const fired = await waitUntil(() => survivor.invocations.some((record) => record.phase === "end"), 180_000);
  if (fired)
    await waitUntil(async () => ((await readStatusBlob(world.blobs, hostId, "Tick"))?.lastMs ?? 0) > killMs, 5000);
  await world.stop(survivor);
  await holder.proxy.close();
  const survivorRequests = lockRequests(survivor, target);
  const acquire = survivorRequests.find((request) => request.action === "acquire" && request.status === 201);
  const start = survivor.invocations.find((record) => record.phase === "start");
  return {
    acquireAfterKillS: acquire === undefined ? null : round((acquire.atMs - killMs) / 1000, 1),
    firedAfterKillS: start === undefined ? null : round((start.atMs - killMs) / 1000, 1),
    firedAfterAcquireS:
      start === undefined || acquire === undefined ? null : round((start.atMs - acquire.atMs) / 1000, 1),
    ...(await pastDueFacts(world.blobs, hostId, start, tMs)),
  };
}

function rowsOf(result: Record<Side, SideResult>): Row[] {
  const bound = PERIOD_S + RECOVERY_S + 3;
  const same = (pick: (side: SideResult) => unknown): boolean =>
    JSON.stringify(pick(result.sdk)) === JSON.stringify(pick(result.local));
  const takesOver = (side: SideResult): boolean => side.acquireAfterKillS !== null && side.acquireAfterKillS <= bound;
  const pastDue = (side: SideResult) => ({
    firedAfterKillS: side.firedAfterKillS,
    firedAfterAcquireS: side.firedAfterAcquireS,
    isPastDue: side.isPastDue,
    statusNextIsT: side.statusNextIsT,
  });
  const firesAtOnce = (side: SideResult): boolean =>
    side.firedAfterAcquireS !== null && side.firedAfterAcquireS <= 2 && side.isPastDue === true;
  return [
    measuredRow(
      "lock.failover",
      `When the holder dies, a survivor takes the lock once the dead holder's lease has run out, at its next recovery poll (the hosts' defaults: ${PERIOD_S} s, ${RECOVERY_S} s)`,
      { acquireAfterKillS: result.sdk.acquireAfterKillS },
      { acquireAfterKillS: result.local.acquireAfterKillS },
      takesOver(result.sdk) && takesOver(result.local),
      `both: the survivor acquires within period + recovery + 3 s (${bound} s) of the kill`,
    ),
    measuredRow(
      "timer.past-due-failover",
      "After a failover, the occurrence missed while no instance held the lock runs as soon as the survivor takes it, with isPastDue true and the missed occurrence as scheduleStatus.next; the status then says Last = that run, Next = the next occurrence",
      { ...pastDue(result.sdk), blobAfter: result.sdk.blobAfter },
      { ...pastDue(result.local), blobAfter: result.local.blobAfter },
      firesAtOnce(result.sdk) &&
        firesAtOnce(result.local) &&
        same((side) => [side.isPastDue, side.statusNextIsT, side.blobAfter]),
      "both: fired within 2 s of taking the lock, isPastDue true; the missed occurrence as scheduleStatus.next and the status blob afterwards equal on both",
    ),
  ];
}

export const timerFailoverScenario: Scenario = {
  name: "timer-failover",
  quick: false,
  run: async (world) => rowsOf(await onBothSides((side) => runSide(world, side))),
};
