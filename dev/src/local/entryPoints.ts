import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, extname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { ConfigurationError } from "azure-leader-coordinator/internal";
import { MODULE_FILE } from "./moduleFile.js";

/**
 * Where the local host's own processes start from, and how a user's app entry is loaded. From the package (compiled
 * JS) an instance process is `node <this folder>/instance.js` under plain Node; from this repository's sources (run by
 * tsx or vitest) it is `node --import tsx instance.ts`: tsx as a loader in the same process, not the tsx CLI, which
 * would put a wrapper process between the runner and the instance (SIGKILL must hit the instance itself).
 */

/** True when this module runs from TypeScript sources (tsx, vitest), not from the compiled package. */
const FROM_SOURCES = extname(MODULE_FILE) === ".ts";
/** This folder: the instance entry is here. */
const HERE = dirname(MODULE_FILE);

/** True when this process runs the host from its TypeScript sources (so it can load a TypeScript app entry too). */
export function runningFromSources(): boolean {
  return FROM_SOURCES;
}

/** How to run a module of this folder as a process's entry: `node ...nodeArgs script`. */
export interface LocalModule {
  /** Flags it needs (tsx's loader from sources; none compiled). */
  readonly nodeArgs: readonly string[];
  readonly script: string;
}

/** The module `name` of this folder (`instance`) as a process's entry. */
export function localModule(name: string): LocalModule {
  if (!FROM_SOURCES) return { nodeArgs: [], script: join(HERE, `${name}.js`) };
  return { nodeArgs: ["--import", tsxLoaderFrom(MODULE_FILE)], script: join(HERE, `${name}.ts`) };
}

/** tsx's loader as a `--import` URL, resolved from `fromFile`; undefined when tsx is not installed there. */
function tsxLoaderFrom(fromFile: string): string {
  return pathToFileURL(createRequire(fromFile).resolve("tsx")).href;
}

/** A TypeScript entry file, which plain Node cannot load (tsx can). */
export function isTypeScriptEntry(entryPath: string): boolean {
  return [".ts", ".mts", ".cts"].includes(extname(entryPath).toLowerCase());
}

/**
 * The extra `node` arguments an app entry needs: none for JavaScript; for TypeScript, tsx as a loader — the one this
 * repository runs with when the host runs from sources, else the one installed in the app's project.
 *
 * @throws ConfigurationError when the entry does not exist, or is TypeScript and the project has no tsx.
 */
export function appEntryArgs(entryPath: string, projectDir: string): string[] {
  const entry = resolve(entryPath);
  if (!existsSync(entry))
    throw new ConfigurationError(
      `The app entry ${entry} does not exist. Build your app first (e.g. npm run build), or name its compiled entry with --app.`,
    );
  if (!isTypeScriptEntry(entry) || FROM_SOURCES) return [];
  try {
    return ["--import", tsxLoaderFrom(join(resolve(projectDir), "package.json"))];
  } catch {
    throw new ConfigurationError(
      `The app entry ${entry} is TypeScript, which Node runs only through a loader: build your app and name its compiled JavaScript entry (e.g. --app dist/index.js), or install tsx in your project (npm install --save-dev tsx).`,
    );
  }
}
