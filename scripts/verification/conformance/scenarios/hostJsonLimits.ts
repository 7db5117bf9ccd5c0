import type { Side } from "../hostProcess";
import { measuredRow, type Row } from "../rows";
import { onBothSides, type Scenario } from "../scenario";
import type { HostSpec } from "../spec";
import type { World } from "../world";

/**
 * host.json values the real host refuses at start: `singleton.listenerLockRecoveryPollingInterval` below 15 s (the
 * SDK's SingletonOptions allow 15 s and more) and `singleton.listenerLockPeriod` outside 15–60 s.
 */

interface Outcome {
  started: boolean;
  /** The first line of why it did not. */
  refusal: string | null;
}

async function startOrRefuse(world: World, side: Side, singleton: HostSpec["singleton"]): Promise<Outcome> {
  const hostId = world.unique(`limits-${side}`);
  try {
    const host = await world.start(side, { hostId, functions: ["Tick"], schedule: "0 0 0 1 1 *", singleton });
    await world.stop(host);
    return { started: true, refusal: null };
  } catch (error) {
    const text = error instanceof Error ? error.message : String(error);
    const line = text.split("\n").find((candidate) => /Exception|must be|out of the range/i.test(candidate));
    return { started: false, refusal: (line ?? text.split("\n")[0] ?? "").slice(0, 200) };
  }
}

async function run(world: World): Promise<Row[]> {
  const [recovery, period] = await Promise.all([
    onBothSides((side) => startOrRefuse(world, side, { periodS: 15, recoveryS: 5 })),
    onBothSides((side) => startOrRefuse(world, side, { periodS: 10, recoveryS: 15 })),
  ]);
  return [
    measuredRow(
      "host-json.recovery-minimum",
      "host.json singleton.listenerLockRecoveryPollingInterval below 15 s is refused at start",
      recovery.sdk,
      recovery.local,
      recovery.sdk.started === recovery.local.started,
      "whether the host started, equal on both",
    ),
    measuredRow(
      "host-json.period-range",
      "host.json singleton.listenerLockPeriod outside 15–60 s is refused at start",
      period.sdk,
      period.local,
      period.sdk.started === period.local.started,
      "whether the host started, equal on both",
    ),
  ];
}

export const hostJsonLimitsScenario: Scenario = { name: "host-json-limits", quick: true, run };
