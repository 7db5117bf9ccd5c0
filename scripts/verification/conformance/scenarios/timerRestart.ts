import type { Side } from "../hostProcess";
import { measuredRow, type Row } from "../rows";
import { onBothSides, round, type Scenario } from "../scenario";
import { dailyAt, pastDueFacts, readStatusBlob, type PastDueFacts } from "../timerStatus";
import { waitUntil, type World } from "../world";

/**
 * An occurrence missed while no host ran the timer: a host of the app starts the timer (a schedule that fires once a
 * day, at a moment T a little later, so the monitor is on and the status records T as next), stops gracefully before
 * T (releasing the listener lock), and another host of the app starts after T. The SDK's listener, on starting, finds
 * T passed and runs it at once with isPastDue true — the same check that runs a missed occurrence after a failover
 * (timer-failover, the full run, measures that path with a SIGKILL and the lock's default periods).
 */

interface SideResult extends PastDueFacts {
  /** Seconds from the second host's start (ready) to its invocation. */
  firedAfterReadyS: number | null;
}

async function runSide(world: World, side: Side): Promise<SideResult> {
  const hostId = world.unique(`restart-${side}`);
  const tMs = Math.ceil((Date.now() + 15_000) / 1000) * 1000;
  const spec = {
    hostId,
    functions: ["Tick"] as const,
    schedule: dailyAt(tMs),
  };
  const first = await world.start(side, spec, `${hostId}-a`);
  // Its listener started: the status records T.
  await waitUntil(async () => (await readStatusBlob(world.blobs, hostId, "Tick"))?.nextMs === tMs, 10_000);
  await world.stop(first);
  await waitUntil(() => Date.now() > tMs + 1000, 30_000);
  const second = await world.start(side, spec, `${hostId}-b`);
  const readyMs = Date.now();
  const fired = await waitUntil(() => second.invocations.some((record) => record.phase === "end"), 15_000);
  if (fired)
    await waitUntil(async () => ((await readStatusBlob(world.blobs, hostId, "Tick"))?.lastMs ?? 0) > tMs, 5000);
  await world.stop(second);
  const start = second.invocations.find((record) => record.phase === "start");
  return {
    firedAfterReadyS: start === undefined ? null : round((start.atMs - readyMs) / 1000, 1),
    ...(await pastDueFacts(world.blobs, hostId, start, tMs)),
  };
}

function rowsOf(result: Record<Side, SideResult>): Row[] {
  const firesAtOnce = (side: SideResult): boolean =>
    side.firedAfterReadyS !== null && side.firedAfterReadyS <= 5 && side.isPastDue === true;
  const facts = (side: SideResult): unknown => [side.isPastDue, side.statusNextIsT, side.blobAfter];
  return [
    measuredRow(
      "timer.past-due",
      "An occurrence missed while no host held the timer's listener runs as soon as a host's listener starts, with isPastDue true and the missed occurrence as scheduleStatus.next; the status then says Last = that run, Next = the next occurrence",
      result.sdk,
      result.local,
      firesAtOnce(result.sdk) &&
        firesAtOnce(result.local) &&
        JSON.stringify(facts(result.sdk)) === JSON.stringify(facts(result.local)),
      "both: fired within 5 s of the host's start, isPastDue true; scheduleStatus.next and the status blob afterwards equal on both",
    ),
  ];
}

export const timerRestartScenario: Scenario = {
  name: "timer-restart",
  quick: true,
  run: async (world) => rowsOf(await onBothSides((side) => runSide(world, side))),
};
