import { main, runDevAsProcess } from "../../dev/src/cli/main";
import { REPO_APP } from "../support/repoApp";

/**
 * `npm run local -- [flags]`: the development package's `azure-leader-coordinator-dev local` (`dev/src/cli/`,
 * `dev/src/local/`) on this
 * repository's own app — `functions/index.ts` from sources, `host.json` — with the group-by demo job unless a
 * `--job` is given. Any flag of `local --help` works.
 */

/** The `local` command line for this repository's app: its entry and host.json, and the demo unless `--job`. */
export function repoLocalArgs(argv: readonly string[]): string[] {
  const demo = argv.includes("--job") || argv.includes("--demo") ? [] : ["--demo"];
  return ["local", "--app", REPO_APP.LOCAL_APP_ENTRY, "--host-json", REPO_APP.LOCAL_HOST_JSON, ...demo, ...argv];
}

/** Runs `npm run local` with `argv` and returns its exit code. */
export function runRepoLocal(argv: readonly string[]): Promise<number> {
  return main(repoLocalArgs(argv));
}

if (require.main === module) runDevAsProcess(repoLocalArgs(process.argv.slice(2)));
