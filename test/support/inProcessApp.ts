import { type CoordinatorApp, type Sink } from "../../src/app/context";
import { createRepoApp } from "../../scripts/support/repoKinds";
import type { AppEvent } from "../../src/app/events";
import { runCoordinatorTick } from "../../src/app/operations";
import { uniqueName } from "./azuriteFixture";
import { drainWorkQueue } from "./drainWork";

export { drainWorkQueue } from "./drainWork";

/** App settings for a test on Azurite: fresh container and queue names, a one-second step budget. */
export function testAppSettings(connectionString: string): Record<string, string> {
  const suffix = uniqueName("t").slice(2);
  return {
    COORDINATION_STORAGE: connectionString,
    LEASE_CONTAINER: `leases-${suffix}`,
    STATE_CONTAINER: `state-${suffix}`,
    INPUT_CONTAINER: `inputs-${suffix}`,
    SYSTEM_CONTAINER: `system-${suffix}`,
    WORK_QUEUE: `work-${suffix}`,
    RESULTS_QUEUE: `results-${suffix}`,
    WAKE_QUEUE: `wake-${suffix}`,
    WEBSITE_INSTANCE_ID: `test-${suffix}`,
    STEP_BUDGET_MS: "1000",
  };
}

/** An app on Azurite with fresh container and queue names, and a sink that records events. */
export function newTestApp(
  connectionString: string,
  overrides: Record<string, string> = {},
): { app: CoordinatorApp; events: AppEvent[]; sink: Sink; logs: string[] } {
  const app = createRepoApp({ ...testAppSettings(connectionString), ...overrides });
  const events: AppEvent[] = [];
  const logs: string[] = [];
  const log = (message: string): void => {
    logs.push(message);
  };
  const sink: Sink = {
    logger: { verbose: log, info: log, warn: log, error: log },
    emit: (event) => events.push(event),
  };
  return { app, events, sink, logs };
}

/** Ticks and drains until the job completes or `maxRounds` pass. */
export async function runUntilComplete(
  app: CoordinatorApp,
  sink: Sink,
  isComplete: () => Promise<boolean>,
  maxRounds = 50,
): Promise<number> {
  for (let round = 1; round <= maxRounds; round++) {
    await runCoordinatorTick(app, sink);
    if (await isComplete()) return round;
    while ((await drainWorkQueue(app, sink)) > 0) {
      // keep draining
    }
  }
  throw new Error(`job did not complete in ${maxRounds} rounds`);
}
