import { createCoordinatorApp, type AppBuildOptions, type CoordinatorApp } from "../../src/app/context";
import { TaskRegistry } from "../../src/coordination/kinds/taskRegistry";
import { groupByKind } from "../../src/groupBy/groupBy";

/** A registry of this repository's kinds (the group-by kind): what its tools, benchmarks and tests use. */
export function createRegistry(): TaskRegistry {
  return new TaskRegistry([groupByKind]);
}

/**
 * The app built from settings as `createCoordinatorApp` builds it, with this repository's kinds unless `options`
 * names a registry: the package's wiring knows no kind, so its tools and tests bring theirs as a user's app does.
 */
export function createRepoApp(
  env: Record<string, string | undefined> = process.env,
  options: Partial<AppBuildOptions> = {},
): CoordinatorApp {
  return createCoordinatorApp(env, { ...options, registry: options.registry ?? createRegistry() });
}
