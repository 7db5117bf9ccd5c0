import type { RpcLogLevel } from "./coreApi.js";
import type { RegisteredHook } from "./registrations.js";

/**
 * The app-level hooks (`app.hook.appStart`, `app.hook.appTerminate`) run the way the Node worker runs them: in
 * registration order, each awaited, with one `hookData` object shared by the app-level hooks. The worker runs
 * appTerminate hooks when the host tells it to terminate (deploys, scale-in) and exits right after; the local host does
 * the same on SIGTERM. Invocation and log hooks are not run locally (docs/LOCAL-HOST.md, "Known gaps").
 */

/** Hooks the local host runs. */
const RUN_LOCALLY = new Set(["appStart", "appTerminate"]);

/** Where the hooks' outcome lines go. */
export type HookLog = (level: RpcLogLevel, message: string) => void;

/** The app's lifecycle hooks of one host. */
export class AppHooks {
  /** Shared by appStart and appTerminate hooks (the worker's `appLevelOnlyHookData`). */
  private readonly hookData: Record<string, unknown> = {};
  /** Shared by every hook (the worker's `appHookData`). */
  private readonly appHookData: Record<string, unknown> = {};

  constructor(
    private readonly hooks: readonly RegisteredHook[],
    private readonly log: HookLog,
  ) {}

  /** Names of registered hooks the local host does not run. */
  get notRun(): string[] {
    return this.hooks.filter((hook) => !RUN_LOCALLY.has(hook.name)).map((hook) => hook.name);
  }

  /** Runs the appStart hooks. @throws what a hook threw: the worker fails to start then too. */
  async runAppStart(functionAppDirectory: string): Promise<void> {
    for (const hook of this.byName("appStart")) await hook.callback({ ...this.contextFields(), functionAppDirectory });
  }

  /**
   * Runs the appTerminate hooks, at most `timeoutMs` in all (the host stops waiting for a worker after its grace
   * period). A hook that throws is logged and the next one still runs. Returns false when the time ran out.
   */
  async runAppTerminate(timeoutMs: number): Promise<boolean> {
    const hooks = this.byName("appTerminate");
    if (hooks.length === 0) return true;
    const startedMs = Date.now();
    this.log("information", `Running ${hooks.length} appTerminate hook(s).`);
    const all = (async () => {
      for (const hook of hooks) {
        try {
          await hook.callback(this.contextFields());
        } catch (error) {
          this.log(
            "error",
            `An appTerminate hook failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
          );
        }
      }
      return true;
    })();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<false>((resolveDeadline) => {
      timer = setTimeout(() => resolveDeadline(false), timeoutMs);
    });
    const finished = await Promise.race([all, deadline]);
    clearTimeout(timer);
    const elapsedMs = Date.now() - startedMs;
    this.log(
      finished ? "information" : "warning",
      finished
        ? `appTerminate hooks finished in ${elapsedMs} ms.`
        : `appTerminate hooks were still running after ${timeoutMs} ms; stopping anyway.`,
    );
    return finished;
  }

  private byName(name: string): RegisteredHook[] {
    return this.hooks.filter((hook) => hook.name === name);
  }

  /**
   * The fields of the worker's hook context; the library builds its `AppStartContext`/`AppTerminateContext` from them.
   */
  private contextFields(): { hookData: Record<string, unknown>; appHookData: Record<string, unknown> } {
    return { hookData: this.hookData, appHookData: this.appHookData };
  }
}
