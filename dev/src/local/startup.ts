import { readSettings, settingsSchema, type Settings, parseNcrontab, delay } from "azure-leader-coordinator/internal";
import { NODE_WORKER_ARGUMENTS, lastOutput, type InstanceProcess } from "./instances.js";
import type { LocalOptions } from "./options.js";

/**
 * What every caller that starts instances shares (the runner, the testing entry, the chaos suite, the benchmarks):
 * the instances' app settings, and the wait until they are ready.
 */

/**
 * The instances' app settings: `baseEnv` with the storage and the schedule, and every setting the app reads filled in
 * with its default (bindings name settings such as %WORK_QUEUE%; in Azure the Bicep sets every one). The coordination
 * account doubles as host storage (AzureWebJobsStorage), where the host keeps the timer listener lock. Without a
 * STEP_BUDGET_MS, a schedule faster than the app's default budget (the runner's 5 s) gets a budget one second below
 * its shortest interval, which the app requires.
 */
export function instanceEnv(
  baseEnv: Record<string, string | undefined>,
  connectionString: string,
  schedule: string,
  lock: Pick<LocalOptions, "listenerLockPeriodS" | "listenerLockRecoveryS"> = {},
): { env: Record<string, string | undefined>; settings: Settings } {
  const env: Record<string, string | undefined> = {
    ...baseEnv,
    COORDINATION_STORAGE: connectionString,
    AzureWebJobsStorage: connectionString,
    COORDINATOR_SCHEDULE: schedule,
    LOCAL_LISTENER_LOCK_PERIOD_SECONDS:
      lock.listenerLockPeriodS?.toString() ?? baseEnv.LOCAL_LISTENER_LOCK_PERIOD_SECONDS,
    LOCAL_LISTENER_LOCK_RECOVERY_SECONDS:
      lock.listenerLockRecoveryS?.toString() ?? baseEnv.LOCAL_LISTENER_LOCK_RECOVERY_SECONDS,
    // A killed instance's messages come back after 30 s instead of the host's 10 min (renewed while running).
    LOCAL_MESSAGE_LEASE_SECONDS: baseEnv.LOCAL_MESSAGE_LEASE_SECONDS ?? "30",
    // The Node flags the app is deployed with (an empty value runs Node's defaults).
    languageWorkers__node__arguments: baseEnv.languageWorkers__node__arguments ?? NODE_WORKER_ARGUMENTS,
  };
  if ((baseEnv.STEP_BUDGET_MS ?? "").trim() === "") env.STEP_BUDGET_MS = budgetBelow(schedule);
  const settings = readSettings(env);
  for (const [name, value] of Object.entries(settings)) if ((env[name] ?? "").trim() === "") env[name] = String(value);
  return { env, settings };
}

/** The app's default step budget, or one second below the schedule's shortest interval when that is shorter. */
function budgetBelow(schedule: string): string | undefined {
  const parsed = parseNcrontab(schedule);
  const defaultBudget = settingsSchema.shape.STEP_BUDGET_MS.parse(undefined);
  if (!parsed.ok || parsed.schedule.shortestIntervalMs > defaultBudget) return undefined;
  return String(Math.max(1000, parsed.schedule.shortestIntervalMs - 1000));
}

/**
 * Waits until every instance has reported ready, at most `timeoutMs`.
 *
 * @throws Error when one exits first, or naming those not ready in time, with their last output.
 */
export async function waitForReady(
  instances: readonly InstanceProcess[],
  abortSignal: AbortSignal | undefined,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const dead = instances.find((instance) => instance.state.exit !== undefined);
    if (dead !== undefined)
      throw new Error(`${dead.state.name} exited while starting. Its last output:\n${lastOutput(dead.state)}`);
    const starting = instances.filter((instance) => instance.state.role === "starting");
    if (starting.length === 0) return;
    if (Date.now() > deadline)
      throw new Error(
        `${starting.map((instance) => instance.state.name).join(", ")} did not start within ${timeoutMs} ms. The last output:\n${starting.map((instance) => `${instance.state.name}:\n${lastOutput(instance.state)}`).join("\n")}`,
      );
    await delay(100, { abortSignal });
  }
}
