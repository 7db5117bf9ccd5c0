import Module from "node:module";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type {
  CoreApi,
  Disposable,
  FunctionCallback,
  FunctionMetadata,
  ProgrammingModel,
  RpcLogCategory,
  RpcLogLevel,
} from "./coreApi.js";

/**
 * Captures the app's real registrations the way the Functions Node worker does: by answering
 * `require("@azure/functions-core")` before the app is loaded. `@azure/functions` looks that module up lazily, on the
 * first `app.*` call, and caches the answer for the life of the process — so the shim is installed once per process
 * and kept on `globalThis` (a test runner may evaluate this file more than once while `@azure/functions` stays cached).
 */

const CORE_MODULE = "@azure/functions-core";
const STATE_KEY: unique symbol = Symbol.for("azure-leader-coordinator.local-host.core-api");

/** One `registerFunction` call: the metadata the host would index and the handler the worker would call. */
export interface RegisteredFunction {
  readonly metadata: FunctionMetadata;
  readonly callback: FunctionCallback;
}

/**
 * One `registerHook` call: the hook's name (`appStart`, `appTerminate`, …) and the library's wrapper of the handler.
 */
export interface RegisteredHook {
  readonly name: string;
  /** Called with the worker's hook context (`{ hookData, appHookData }`); may return a promise. */
  readonly callback: HookCallback;
}

/** What the library registers for a hook: it wraps the app's handler and calls it with a context built from ours. */
export type HookCallback = (coreContext: unknown) => unknown;

/** The app as the local host sees it. */
export interface FunctionApp {
  /** Every function, in registration order. */
  readonly functions: readonly RegisteredFunction[];
  /** The library's programming model, which converts trigger data to handler arguments and results back. */
  readonly programmingModel: ProgrammingModel;
  /** Hooks the app registered (`app.hook.*`), in registration order. */
  readonly hooks: readonly RegisteredHook[];
}

/** Where the library's own log lines (`coreApi.log`, category "system") go. */
export type SystemLogSink = (level: RpcLogLevel, category: RpcLogCategory, message: string) => void;

interface ShimState {
  programmingModel: ProgrammingModel | undefined;
  functions: RegisteredFunction[];
  hooks: RegisteredHook[];
  systemLog: SystemLogSink;
}

type GlobalWithShim = typeof globalThis & { [STATE_KEY]?: ShimState };

/** Sends the library's system log lines (e.g. "Discarding the body of the incoming GET request") to `sink`. */
export function setSystemLogSink(sink: SystemLogSink): void {
  installCoreApiShim().systemLog = sink;
}

/**
 * Loads the app entry (a module that imports every function module) with the shim in place and returns what it
 * registered. Calling it again for the same entry returns only what was registered since: modules run once.
 *
 * @throws Error when the entry registered nothing (already loaded, or `@azure/functions` was used before the shim).
 */
export async function loadFunctionApp(entryPath: string): Promise<FunctionApp> {
  const state = installCoreApiShim();
  const before = state.functions.length;
  const hooksBefore = state.hooks.length;
  await import(pathToFileURL(resolve(entryPath)).href);
  const functions = state.functions.slice(before);
  const programmingModel = state.programmingModel;
  if (functions.length === 0 || programmingModel === undefined) {
    throw new Error(
      `Loading ${entryPath} registered no functions. Either it was already loaded in this process, or "@azure/functions" ` +
        "ran an app.* call before the local host installed its @azure/functions-core shim (it then stays in test mode).",
    );
  }
  return { functions, programmingModel, hooks: state.hooks.slice(hooksBefore) };
}

/** Installs the `@azure/functions-core` answer once per process and returns its shared state. */
function installCoreApiShim(): ShimState {
  const holder = globalThis as GlobalWithShim;
  const existing = holder[STATE_KEY];
  if (existing !== undefined) return existing;
  const state: ShimState = { programmingModel: undefined, functions: [], hooks: [], systemLog: () => undefined };

  class CoreDisposable implements Disposable {
    constructor(private readonly callOnDispose: () => void) {}
    dispose(): void {
      this.callOnDispose();
    }
  }
  const coreApi: CoreApi = {
    version: "local",
    hostVersion: "4.0.0-local",
    setProgrammingModel: (model) => {
      state.programmingModel = model;
    },
    getProgrammingModel: () => state.programmingModel,
    registerFunction: (metadata, callback) => {
      const entry = { metadata, callback };
      state.functions.push(entry);
      return new CoreDisposable(() => {
        state.functions = state.functions.filter((candidate) => candidate !== entry);
      });
    },
    registerHook: (hookName, callback) => {
      const entry: RegisteredHook = { name: hookName, callback: callback as HookCallback };
      state.hooks.push(entry);
      return new CoreDisposable(() => {
        state.hooks = state.hooks.filter((candidate) => candidate !== entry);
      });
    },
    log: (level, category, message) => {
      state.systemLog(level, category, message);
    },
    Disposable: CoreDisposable,
  };

  // The worker does the same (setupCoreModule.ts): every CommonJS `require` goes through Module.prototype.require,
  // including the one inside @azure/functions' bundle, so answering there needs no package on disk.
  const prototype = Module.prototype as unknown as { require: (this: unknown, id: string) => unknown };
  const originalRequire = prototype.require;
  prototype.require = function requireWithCoreApi(this: unknown, id: string): unknown {
    return id === CORE_MODULE ? coreApi : Reflect.apply(originalRequire, this, [id]);
  };
  holder[STATE_KEY] = state;
  return state;
}
