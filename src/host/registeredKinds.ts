import type { TaskRegistry } from "../coordination/kinds/taskRegistry.js";

/**
 * The task kinds each `registerCoordinator` call of this process registered, in order: what the development
 * tools read after loading a user's app, to check a job against its kinds before anything starts (`local --job`).
 * Kept on `globalThis` under a registered symbol, so a tool and the app see one list even when each loaded its own copy
 * of this module. Memory only: nothing another instance needs.
 */

const KEY: unique symbol = Symbol.for("azure-leader-coordinator.registered-task-kinds");

type GlobalWithKinds = typeof globalThis & { [KEY]?: TaskRegistry[] };

/** Records the kinds of one registration. */
export function recordRegisteredKinds(registry: TaskRegistry): void {
  const holder = globalThis as GlobalWithKinds;
  (holder[KEY] ??= []).push(registry);
}

/** The kinds of every registration of this process so far, in order (none: an empty list). */
export function registeredTaskKinds(): readonly TaskRegistry[] {
  return (globalThis as GlobalWithKinds)[KEY] ?? [];
}
