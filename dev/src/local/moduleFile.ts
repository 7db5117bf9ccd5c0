import { fileURLToPath } from "node:url";

/**
 * This module's own file, in every way the package runs: the ESM build (`import.meta.url`), this repository's sources
 * under tsx or vitest (which define `__filename`), and the CommonJS build, where `moduleFile-cjs.cts` replaces this
 * file (tshy's dialect switching: a CommonJS file may not mention `import.meta`). The local host finds its instance
 * entry and resolves packages beside itself from here.
 */
export const MODULE_FILE: string =
  typeof __filename === "string"
    ? __filename
    : // The typecheck reads src/ as CommonJS, where import.meta is refused (TS1470); only the ESM build compiles it.
      // eslint-disable-next-line @typescript-eslint/ban-ts-comment -- valid in one build, refused in the other
      // @ts-ignore
      fileURLToPath(import.meta.url);
