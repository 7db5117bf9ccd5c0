import { buffer } from "node:stream/consumers";
import { registeredTaskKinds, validateSubmission, type FieldError } from "azure-leader-coordinator/internal";
import { loadFunctionApp } from "./registrations.js";

/**
 * Entry of the process that checks a job against the user's app before a local run starts anything (`checkJob.ts`
 * starts it, as an instance is started, so the app's own code runs in a process of its own): it loads the app
 * (`LOCAL_APP_ENTRY`, with the instances' app settings), reads the job from stdin, validates it with the kinds the
 * app's `registerCoordinator` calls registered — as the app's submit route would, without storage — and writes one
 * JSON line: the verdict and the app's kinds.
 */

/** What the check process writes. */
export type JobCheckVerdict =
  | { ok: true; kinds: string[] }
  | { ok: false; kinds: string[]; errors: FieldError[] }
  | { ok: false; kinds: string[]; problem: string };

async function main(): Promise<JobCheckVerdict> {
  const entry = process.env.LOCAL_APP_ENTRY ?? "";
  const body = JSON.parse((await buffer(process.stdin)).toString("utf8")) as unknown;
  await loadFunctionApp(entry);
  const registries = registeredTaskKinds();
  const kinds = registries.flatMap((registry) => registry.names());
  const [registry, ...others] = registries;
  if (registry === undefined)
    return {
      ok: false,
      kinds,
      problem: `${entry} calls no registerCoordinator: there is no coordinator to run the job.`,
    };
  if (others.length > 0)
    return {
      ok: false,
      kinds,
      problem: `${entry} registers ${registries.length} coordinators; a local run takes one.`,
    };
  const checked = validateSubmission(body, registry);
  return checked.ok ? { ok: true, kinds } : { ok: false, kinds, errors: checked.errors };
}

main().then(
  (verdict) => process.stdout.write(`${JSON.stringify(verdict)}\n`, () => process.exit(0)),
  (error: unknown) => {
    const problem = `the app failed to load: ${error instanceof Error ? error.message : String(error)}`;
    process.stdout.write(`${JSON.stringify({ ok: false, kinds: [], problem })}\n`, () => process.exit(0));
  },
);
