import type { Side } from "../hostProcess";
import { measuredRow, type Row } from "../rows";
import { base64, onBothSides, round, type Scenario } from "../scenario";
import { waitUntil, type World } from "../world";

/**
 * A message whose function runs 5.5 minutes: the host received it invisible for 10 minutes and keeps it so, extending
 * the visibility at about half of that (Update Message with visibilitytimeout=600), then deletes it. Full run only.
 */

const WORK_MS = 330_000;

interface SideResult {
  receiveVisibilityS: number | null;
  /** Seconds from the receive to each visibility update, and the visibility it set. */
  updates: { afterS: number; visibilityS: number | null }[];
  deleted: boolean;
}

async function runSide(world: World, side: Side): Promise<SideResult> {
  const name = world.unique(`long-${side}`);
  const queue = await world.createQueue(name);
  const id = (await queue.sendMessage(base64(`sleep-${WORK_MS}-long`))).messageId;
  const host = await world.start(side, { hostId: name, functions: ["Work"], workQueue: name });
  await waitUntil(() => host.invocations.some((record) => record.phase === "end"), WORK_MS + 60_000);
  await new Promise((done) => setTimeout(done, 1000));
  const requests = host.requests().filter((request) => request.name === name);
  await world.stop(host);
  const receive = requests.find((request) => request.received?.some((message) => message.id === id) === true);
  const target = `${name}/messages/${id}`;
  return {
    receiveVisibilityS: receive?.visibilityTimeoutS ?? null,
    updates: requests
      .filter((request) => request.method === "PUT" && request.target === target)
      .map((request) => ({
        afterS: round((request.atMs - (receive?.atMs ?? request.atMs)) / 1000, 1),
        visibilityS: request.visibilityTimeoutS ?? null,
      })),
    deleted: requests.some((request) => request.method === "DELETE" && request.target === target),
  };
}

function rowsOf(result: Record<Side, SideResult>): Row[] {
  const renews = (side: SideResult): boolean =>
    side.receiveVisibilityS === 600 &&
    side.updates.length === 1 &&
    side.updates[0]?.visibilityS === 600 &&
    Math.abs(side.updates[0].afterS - 300) <= 15 &&
    side.deleted;
  return [
    measuredRow(
      "queue.long-message",
      "A message whose function runs longer than the 10 minutes' visibility's half stays invisible: extended to 600 s at about 300 s, deleted at the end",
      result.sdk,
      result.local,
      renews(result.sdk) && renews(result.local),
      "both: received with 600 s, one update with 600 s at 300 ± 15 s, then the delete",
    ),
  ];
}

export const queueLongMessageScenario: Scenario = {
  name: "queue-long-message",
  quick: false,
  background: true,
  run: async (world) => rowsOf(await onBothSides((side) => runSide(world, side))),
};
