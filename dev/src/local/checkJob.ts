import { spawn } from "node:child_process";
import { ConfigurationError } from "azure-leader-coordinator/internal";
import { appEntryArgs, localModule } from "./entryPoints.js";
import type { JobCheckVerdict } from "./jobCheck.js";

/**
 * Checks a job against the user's app before a local run starts anything (issue 44: a job of an unknown kind was
 * refused only after Azurite and the instances had started, some 11 s later): the app is loaded in a process of its
 * own with the instances' settings (`jobCheck.ts`), and its kinds validate the job as its submit route would.
 */

/** How long the check may take: loading the app, as an instance does at its start. */
const CHECK_TIMEOUT_MS = 60_000;

/**
 * Resolves when the app accepts the job.
 *
 * @param env - the instances' environment (the app's settings, `LOCAL_APP_ENTRY`, `LOCAL_PROJECT_DIR`).
 * @param source - the job's origin for the message ("job.json", "the group-by demo job").
 * @throws ConfigurationError naming each field the app's kinds refuse, with the kinds it registers; or why the app
 *   could not be checked.
 */
export async function checkJobAgainstApp(
  body: unknown,
  env: Record<string, string | undefined>,
  source: string,
): Promise<void> {
  const entry = env.LOCAL_APP_ENTRY ?? "";
  const checker = localModule("jobCheck");
  const loader = appEntryArgs(entry, env.LOCAL_PROJECT_DIR ?? process.cwd());
  const child = spawn(process.execPath, [...loader, ...checker.nodeArgs, checker.script], {
    env,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  child.stdin.end(JSON.stringify(body));
  const exited = await new Promise<boolean>((done) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      done(false);
    }, CHECK_TIMEOUT_MS);
    child.once("exit", () => {
      clearTimeout(timer);
      done(true);
    });
  });
  const line = stdout
    .split("\n")
    .reverse()
    .find((text) => text.startsWith("{"));
  if (!exited || line === undefined)
    throw new ConfigurationError(
      `Could not check ${source} against ${entry}: ${exited ? "the app printed no verdict" : `it did not load within ${CHECK_TIMEOUT_MS / 1000} s`}.${stderr === "" ? "" : `\n${stderr.trim()}`}`,
    );
  const verdict = JSON.parse(line) as JobCheckVerdict;
  if (verdict.ok) return;
  const kinds = verdict.kinds.length === 0 ? "" : ` (its kinds: ${verdict.kinds.join(", ")})`;
  if ("problem" in verdict) throw new ConfigurationError(`Could not check ${source}: ${verdict.problem}`);
  const fields = verdict.errors.map((error) => `\n  ${error.field}: ${error.message}`).join("");
  throw new ConfigurationError(`Your app would refuse ${source}${kinds}; nothing was started:${fields}`);
}
