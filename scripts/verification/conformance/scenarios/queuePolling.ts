import type { Side } from "../hostProcess";
import { measuredRow, type Row } from "../rows";
import { base64, onBothSides, round, type Scenario } from "../scenario";
import { waitUntil, type World } from "../world";

/**
 * Polling an empty queue: the gaps between receives while it stays empty (maxPollingInterval 2 s), then one message,
 * then the gaps after it. The queues extension backs off from 100 ms, by 100 ms × 2^(n−1) (randomised ±20 %), up to
 * maxPollingInterval, and starts again from the bottom after it finds a message.
 */

const MAX_POLLING_MS = 2000;
const IDLE_MS = 10_000;

interface SideResult {
  /** Seconds between receives while the queue was empty. */
  idleGapsS: number[];
  /** Seconds from the message's receive to the next two receives. */
  afterMessageGapsS: number[];
}

async function runSide(world: World, side: Side): Promise<SideResult> {
  const name = world.unique(`poll-${side}`);
  const queue = await world.createQueue(name);
  const host = await world.start(side, {
    hostId: name,
    functions: ["Work"],
    workQueue: name,
    queues: { maxPollingIntervalMs: MAX_POLLING_MS },
  });
  const receives = (): number[] =>
    host
      .requests()
      .filter((request) => request.received !== undefined && request.name === name)
      .map((request) => request.atMs);
  await new Promise((done) => setTimeout(done, IDLE_MS));
  const idle = receives();
  await queue.sendMessage(base64("ok-1"));
  await waitUntil(() => host.invocations.some((record) => record.phase === "end"), 10_000);
  const found = host.requests().find((request) => (request.received?.length ?? 0) > 0)?.atMs ?? Number.NaN;
  await waitUntil(() => receives().filter((atMs) => atMs > found).length >= 2, 10_000);
  await world.stop(host);
  const after = receives().filter((atMs) => atMs >= found);
  const gaps = (times: number[]): number[] =>
    times.slice(1).map((atMs, index) => round((atMs - (times[index] ?? atMs)) / 1000));
  return { idleGapsS: gaps(idle), afterMessageGapsS: gaps(after).slice(0, 2) };
}

/** What the back-off looks like: the first gap, how many gaps until the cap, the gaps at the cap. */
function shape(result: SideResult): { firstS: number; gapsToCap: number; atCapS: number[]; afterMessageS: number[] } {
  const capIndex = result.idleGapsS.findIndex((gap) => gap >= (MAX_POLLING_MS / 1000) * 0.75);
  return {
    firstS: result.idleGapsS[0] ?? Number.NaN,
    gapsToCap: capIndex,
    atCapS: capIndex < 0 ? [] : result.idleGapsS.slice(capIndex),
    afterMessageS: result.afterMessageGapsS,
  };
}

function rowsOf(result: Record<Side, SideResult>): Row[] {
  const sdk = shape(result.sdk);
  const local = shape(result.local);
  const backsOff = (view: ReturnType<typeof shape>): boolean =>
    view.firstS < 0.75 &&
    view.gapsToCap >= 2 &&
    view.atCapS.length >= 1 &&
    view.atCapS.every((gap) => gap <= (MAX_POLLING_MS / 1000) * 1.5);
  return [
    measuredRow(
      "queue.polling-backoff",
      "An empty queue is polled from 100 ms apart, then 100 ms + 2^(n−1) × 100 ms (randomised), up to maxPollingInterval",
      { idleGapsS: result.sdk.idleGapsS, ...sdk },
      { idleGapsS: result.local.idleGapsS, ...local },
      backsOff(sdk) && backsOff(local) && Math.abs(sdk.gapsToCap - local.gapsToCap) <= 1,
      "both: first gap < 0.75 s, at least 2 steps, then gaps ≤ 1.5 × 2 s; the gaps before the cap equal ±1",
    ),
    measuredRow(
      "queue.polling-reset",
      "After a message is found, polling starts again from the bottom",
      sdk.afterMessageS,
      local.afterMessageS,
      [sdk, local].every((view) => view.afterMessageS.length === 2 && (view.afterMessageS[0] ?? 9) < 1),
      "both: the first receive after the message's comes within 1 s (the cap is 2 s)",
    ),
  ];
}

export const queuePollingScenario: Scenario = {
  name: "queue-polling",
  quick: true,
  run: async (world) => rowsOf(await onBothSides((side) => runSide(world, side))),
};
