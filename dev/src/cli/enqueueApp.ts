import { resolve } from "node:path";
import { JobsHttpApi, UsageError, type EnqueueArgs, type JobsApi } from "azure-leader-coordinator/internal";
import { isTypeScriptEntry, runningFromSources } from "../local/entryPoints.js";
import { FunctionsHost } from "../local/host.js";
import { jobsBaseUrl } from "../local/instanceUrls.js";
import { loadFunctionApp } from "../local/registrations.js";

/**
 * `azure-leader-coordinator-dev enqueue --app FILE`: the user's app loaded in this process (its task kinds check the
 * job, its settings name the storage), its job routes answered here with no port open. The command needs submit and
 * status (or cancel); nothing else of the app is reachable, from this process or any other (issue 43, hole 4: it used
 * to serve every route of the app on 127.0.0.1, without a key, against the operator's storage, for as long as it
 * waited).
 */

/** The app's routes in this process, as a {@link JobsApi}, and how to stop it. */
export interface AppJobsApi {
  readonly api: JobsApi;
  stop(): Promise<void>;
}

/** Where the in-process routes pretend to be: never listened on, only parsed for the path. */
const IN_PROCESS_ORIGIN = "http://in-process.invalid";

/**
 * Loads the app and opens its job routes in this process.
 *
 * @throws UsageError for a TypeScript entry outside the repository (build the app first); Error when the app registers
 *   no job routes.
 */
export async function openAppJobsApi(
  target: Extract<EnqueueArgs["target"], { kind: "app" }>,
  action: EnqueueArgs["action"]["kind"],
  log: (message: string) => void,
): Promise<AppJobsApi> {
  if (isTypeScriptEntry(target.entry) && !runningFromSources())
    throw new UsageError(
      `--app ${target.entry} is TypeScript: build your app and name its compiled entry (e.g. --app dist/index.js).`,
    );
  const app = await loadFunctionApp(target.entry);
  const host = new FunctionsHost({
    app,
    // The app's own errors are worth showing; its routine lines are not.
    log: (entry) => {
      if (entry.level === "error" || entry.level === "critical") log(entry.message);
    },
    httpOnly: true,
    listen: false,
    hostJsonPath: target.hostJsonPath ?? resolve("host.json"),
  });
  await host.start();
  const base = jobsBaseUrl(0, host.httpRoutes)?.replace("http://127.0.0.1:0", IN_PROCESS_ORIGIN);
  if (base === undefined) {
    await host.stop();
    throw new Error(`${target.entry} registers no job routes (registerCoordinator with http: false?).`);
  }
  const allowed = action === "cancel" ? ["DELETE"] : action === "status" ? ["GET"] : ["POST", "GET"];
  const inProcess: typeof fetch = async (input, init) => {
    const method = (init?.method ?? "GET").toUpperCase();
    const url = typeof input === "string" ? input : input instanceof URL ? input.toString() : input.url;
    // Only what this command does: its JobsHttpApi asks for nothing else.
    if (!allowed.includes(method) || !url.startsWith(base))
      return new Response(JSON.stringify({ error: `enqueue --app does not ${method} ${url}` }), { status: 403 });
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const body = typeof init?.body === "string" ? Buffer.from(init.body) : Buffer.alloc(0);
    const answer = await host.answer({ method, url, headers, body });
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers))
      for (const one of [value].flat()) responseHeaders.append(name, one);
    const empty = answer.status === 204 || answer.status === 304;
    return new Response(empty ? null : answer.body, { status: answer.status, headers: responseHeaders });
  };
  return {
    api: new JobsHttpApi(() => base, undefined, inProcess),
    stop: async () => {
      await host.stop();
    },
  };
}
