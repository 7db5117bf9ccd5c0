import type { Scenario } from "../scenario";
import { claimsScenario } from "./claims";
import { hostJsonLimitsScenario } from "./hostJsonLimits";
import { queueConcurrencyScenario } from "./queueConcurrency";
import { queueLongMessageScenario } from "./queueLongMessage";
import { queueMessagesScenario } from "./queueMessages";
import { queuePollingScenario } from "./queuePolling";
import { timerFailoverScenario } from "./timerFailover";
import { timerRestartScenario } from "./timerRestart";
import { timerScheduleScenario } from "./timerSchedule";

/** Every scenario of `conformance:host`, in the order they run (background ones beside the others). */
export const SCENARIOS: readonly Scenario[] = [
  queueLongMessageScenario,
  queueMessagesScenario,
  queuePollingScenario,
  queueConcurrencyScenario,
  timerScheduleScenario,
  timerRestartScenario,
  timerFailoverScenario,
  hostJsonLimitsScenario,
  claimsScenario,
];
