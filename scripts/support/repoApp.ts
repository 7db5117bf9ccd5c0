import { resolve } from "node:path";

/**
 * This repository's own Function app as the local host runs it (`dev/src/local`): its entry from sources (the host runs
 * it with tsx) and its host.json. Spread into an instance's environment by the runner, the chaos suite, the
 * benchmarks and the end-to-end tests.
 */

const REPO = resolve(__dirname, "..", "..");

/** `LOCAL_APP_ENTRY` and `LOCAL_HOST_JSON` for this repository's app (`functions/index.ts`, `host.json`). */
export const REPO_APP = {
  LOCAL_APP_ENTRY: resolve(REPO, "functions", "index.ts"),
  LOCAL_HOST_JSON: resolve(REPO, "host.json"),
} as const;
