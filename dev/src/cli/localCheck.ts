import { azuriteConnectionString } from "../local/azurite.js";
import { checkJobAgainstApp } from "../local/checkJob.js";
import { createDemoJob } from "../local/demoData.js";
import type { LocalOptions } from "../local/options.js";
import { appEnv } from "../local/runParts.js";
import { instanceEnv } from "../local/startup.js";

/**
 * `local`'s check of its job against the user's app, before Azurite or any instance starts: the app's kinds validate
 * the job (`--job FILE`, or the demo's group-by job) with the settings the instances will have. Storage is named but
 * never reached (the check does not submit).
 *
 * @throws ConfigurationError naming each field the app would refuse (exit 2, nothing started).
 */
export async function checkLocalJob(
  options: LocalOptions,
  baseEnv: Record<string, string | undefined> = process.env,
): Promise<void> {
  const job = options.job;
  if (job.kind === "none") return;
  const body = job.kind === "submission" ? job.body : createDemoJob(Math.min(job.items, 10), "check").spec;
  const source = job.kind === "submission" ? job.source : "the group-by demo job (--demo)";
  const { env } = instanceEnv(
    baseEnv,
    baseEnv.COORDINATION_STORAGE ?? azuriteConnectionString(10_000, 10_001),
    options.schedule,
    options,
  );
  await checkJobAgainstApp(
    body,
    { ...env, ...appEnv(options.appEntry, options.hostJsonPath, baseEnv.LOCAL_PROJECT_DIR ?? process.cwd()) },
    source,
  );
}
