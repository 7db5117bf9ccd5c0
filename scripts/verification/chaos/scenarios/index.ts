import type { ScenarioOptions, ScenarioResult } from "../scenario";
import { badInputScenario } from "./badInput";
import { duplicatesScenario } from "./duplicates";
import { flowLimitsScenario } from "./flowLimits";
import { frozenTakeoverScenario } from "./frozenTakeover";
import { leaderKillScenario } from "./leaderKill";
import { outageScenario } from "./outage";
import { regionsScenario } from "./regions";
import { revocationScenario } from "./revocation";
import { singleAppLeaderKillScenario } from "./singleAppLeaderKill";
import { workerKillScenario } from "./workerKill";
import { zombieScenario } from "./zombie";

/** A named scenario of the chaos suite. */
export interface ScenarioDefinition {
  name: string;
  run: (options: ScenarioOptions) => Promise<ScenarioResult>;
}

/** Every scenario, in the order the suite runs them (names as `--only` takes them). */
export const SCENARIOS: readonly ScenarioDefinition[] = [
  { name: "leader-kill", run: leaderKillScenario },
  { name: "zombie-leader", run: zombieScenario },
  { name: "frozen-leader-takeover", run: frozenTakeoverScenario },
  { name: "storage-outage", run: outageScenario },
  { name: "worker-kill", run: workerKillScenario },
  { name: "duplicate-delivery", run: duplicatesScenario },
  { name: "bad-input", run: badInputScenario },
  { name: "revocation", run: revocationScenario },
  { name: "two-regions", run: regionsScenario },
  { name: "single-app-leader-kill", run: singleAppLeaderKillScenario },
  { name: "flow-limits", run: flowLimitsScenario },
];
