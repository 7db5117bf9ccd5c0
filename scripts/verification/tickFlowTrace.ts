/**
 * The recorder behind `npm run trace:tick` (tickFlow.ts): imported before anything of `src/`, it makes every module
 * of `src/` loaded after it report each call into one of its exports — functions, and methods and getters of classes —
 * with the module path on the stack at that moment (async frames included).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import Module from "node:module";
import path from "node:path";

const SRC = path.resolve(__dirname, "../../src") + path.sep;
Error.stackTraceLimit = 200;

/** Whether a trace is being taken (only calls made during the ticks count). */
export const tracing = new AsyncLocalStorage<true>();
const paths = new Map<string, string[]>();

function moduleOf(file: string): string | undefined {
  if (!file.startsWith(SRC)) return undefined;
  return file
    .slice(SRC.length)
    .replace(/\.[cm]?[jt]s$/, "")
    .split(path.sep)
    .join("/");
}

/** The modules of `src/` on the current stack, from the outermost call in, consecutive repeats collapsed. */
function modulePath(): string[] {
  const frames = (new Error().stack ?? "").split("\n").slice(1);
  const modules: string[] = [];
  for (const frame of frames) {
    const match = /\(?((?:\/|[A-Za-z]:\\)[^():]+):\d+:\d+\)?$/.exec(frame.trim());
    const module = match?.[1] === undefined ? undefined : moduleOf(match[1]);
    if (module !== undefined && module !== modules.at(-1)) modules.push(module);
  }
  return modules.reverse();
}

/** Records the path to a call into `callee` (its module: the stack's top frame is the wrapper, outside `src/`). */
function record(callee: string): void {
  if (tracing.getStore() === undefined) return;
  const modules = modulePath();
  if (modules.length === 0) return;
  if (modules.at(-1) !== callee) modules.push(callee);
  paths.set(modules.join(" → "), modules);
}

function isClass(value: unknown): value is new (...args: unknown[]) => unknown {
  return typeof value === "function" && /^class\b/.test(Function.prototype.toString.call(value));
}

const patchedClasses = new WeakSet<object>();

/** Records at each method and getter of a class `src/` exports (in place: instances made anywhere are seen). */
function patchClass(cls: new (...args: unknown[]) => unknown, module: string): void {
  if (patchedClasses.has(cls)) return;
  patchedClasses.add(cls);
  const proto = cls.prototype as Record<string, unknown>;
  for (const key of Object.getOwnPropertyNames(proto)) {
    if (key === "constructor") continue;
    const descriptor = Object.getOwnPropertyDescriptor(proto, key);
    if (descriptor === undefined || descriptor.configurable !== true) continue;
    if (typeof descriptor.value === "function") {
      const method = descriptor.value as (...args: unknown[]) => unknown;
      Object.defineProperty(proto, key, {
        ...descriptor,
        value: function (this: unknown, ...args: unknown[]) {
          record(module);
          return method.apply(this, args);
        },
      });
    } else if (descriptor.get !== undefined) {
      const original = descriptor;
      Object.defineProperty(proto, key, {
        ...descriptor,
        get: function (this: unknown): unknown {
          record(module);
          return original.get?.call(this);
        },
      });
    }
  }
}

function instrument(exports: object, module: string): object {
  return new Proxy(exports, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (isClass(value)) {
        patchClass(value, module);
        return value;
      }
      if (typeof value !== "function") return value;
      return entryOf(value as (...args: unknown[]) => unknown, module);
    },
  });
}

const entries = new WeakMap<object, unknown>();

/** One wrapper per exported function, which records the stack as the function is entered. */
function entryOf(fn: (...args: unknown[]) => unknown, module: string): unknown {
  const existing = entries.get(fn);
  if (existing !== undefined) return existing;
  const entry = function (this: unknown, ...args: unknown[]) {
    record(module);
    return fn.apply(this, args);
  };
  Object.defineProperty(entry, "name", { value: fn.name });
  entries.set(fn, entry);
  return entry;
}

const proxies = new WeakMap<object, object>();
type Load = (request: string, parent: unknown, isMain: boolean) => unknown;
const moduleWithLoad = Module as unknown as { _load: Load; _resolveFilename: (r: string, p: unknown) => string };
const load = moduleWithLoad._load;
moduleWithLoad._load = function (request, parent, isMain) {
  const exports = load.call(this, request, parent, isMain);
  if (exports === null || typeof exports !== "object") return exports;
  let filename: string;
  try {
    filename = moduleWithLoad._resolveFilename(request, parent);
  } catch {
    return exports;
  }
  const module = moduleOf(filename);
  if (module === undefined) return exports;
  const existing = proxies.get(exports);
  if (existing !== undefined) return existing;
  const proxy = instrument(exports, module);
  proxies.set(exports, proxy);
  return proxy;
};

/** The modules a tick passes and its returns, from the paths recorded. */
export function analyse(recorded: Iterable<string[]>) {
  const modules = new Set<string>();
  const returns = new Map<string, { into: string; from: string; path: string[] }>();
  for (const modulesOnPath of recorded) {
    modulesOnPath.forEach((module, index) => {
      modules.add(module);
      const from = modulesOnPath[index - 1];
      if (from === undefined || !modulesOnPath.slice(0, index - 1).includes(module)) return;
      const key = `${module} ← ${from}`;
      const known = returns.get(key);
      if (known === undefined || modulesOnPath.length < known.path.length) {
        returns.set(key, { into: module, from, path: modulesOnPath.slice(0, index + 1) });
      }
    });
  }
  return {
    modules: [...modules].sort(),
    returns: [...returns.values()].sort((a, b) => `${a.into}${a.from}`.localeCompare(`${b.into}${b.from}`)),
  };
}

/** The module paths recorded so far, one per distinct path. */
export function recordedPaths(): Iterable<string[]> {
  return paths.values();
}
