/**
 * The parts of a local run that `runLocal` (run.ts) takes in order: the live view, the instance processes, the app's
 * endpoints and jobs API, the job submitted, the timeline written.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { JobsHttpApi, type JobStatus } from "azure-leader-coordinator/internal";
import type { Azurite } from "./azurite.js";
import type { EventLog } from "./eventLog.js";
import { InstanceProcess, type InstanceHandlers } from "./instances.js";
import { jobsBaseUrl, statusPageUrl } from "./instanceUrls.js";
import { LiveView, type LiveMode } from "./liveView.js";
import type { PreparedJob } from "./localJob.js";
import type { RunLocalOptions } from "./options.js";
import type { LocalRunResult } from "./summary.js";
import { renderTimeline } from "./timeline.js";

/** The live view of the run, headed by what runs on which storage. */
export function openView(
  out: NodeJS.WritableStream,
  live: LiveMode,
  run: { instanceCount: number; schedule: string; azurite: Azurite | undefined },
): LiveView {
  const { azurite } = run;
  const storageLabel =
    azurite === undefined ? "COORDINATION_STORAGE" : `Azurite (blob :${azurite.blobPort}, queue :${azurite.queuePort})`;
  return new LiveView(
    out,
    live,
    `Local coordinator: ${run.instanceCount} instances, schedule "${run.schedule}", storage ${storageLabel}`,
  );
}

/** The instance processes, each announced in the event log. */
export function startInstances(
  instances: InstanceProcess[],
  run: {
    count: number;
    apps: number;
    env: Record<string, string | undefined>;
    handlers: InstanceHandlers;
    events: EventLog;
  },
): void {
  const { apps, env, handlers, events } = run;
  for (let index = 1; index <= run.count; index++) {
    // Several apps: instances round-robin over app names; one app: the base env's WEBSITE_SITE_NAME (or the default).
    const siteName = apps > 1 ? `local-app-${((index - 1) % apps) + 1}` : env.WEBSITE_SITE_NAME;
    const instance = new InstanceProcess(`instance-${index}`, { ...env, WEBSITE_SITE_NAME: siteName }, handlers);
    instances.push(instance);
    events.append({
      ts: new Date().toISOString(),
      instance: instance.state.instanceId,
      pid: instance.state.pid,
      type: "instance-started",
    });
  }
}

/** Where the status page is and how to submit work while the run goes on, from the first instance serving HTTP. */
export function printEndpoints(
  instances: readonly InstanceProcess[],
  result: LocalRunResult,
  print: (text: string) => void,
): void {
  const serving = instances.find((instance) => instance.state.httpPort !== undefined);
  if (serving?.state.httpPort === undefined) return;
  result.statusUrl = statusPageUrl(serving.state.httpPort, serving.state.httpRoutes ?? []);
  if (result.statusUrl !== undefined)
    print(`Status page (every instance serves it; it refreshes itself): ${result.statusUrl}`);
  const base = jobsBaseUrl(serving.state.httpPort, serving.state.httpRoutes ?? []);
  if (base !== undefined)
    print(`Submit work while it runs:\n  npx azure-leader-coordinator enqueue --url ${base} --file JOB.json --wait`);
}

/** A job the run submitted, and how to read its status through the app. */
export interface Submitted {
  id: string;
  itemCount: number;
  read: () => Promise<JobStatus | undefined>;
}

/** Submits the prepared job through the app's HTTP route. @throws Error naming what the app refused, and why. */
export async function submit(api: JobsHttpApi, prepared: PreparedJob, options: RunLocalOptions): Promise<Submitted> {
  const answer = await api.submit(prepared.body, { abortSignal: options.abortSignal });
  if (!answer.ok)
    throw new Error(
      `The app refused ${prepared.source} (HTTP ${answer.httpStatus}): ${answer.error}${answer.errors.map((error) => `\n  ${error.field}: ${error.message}`).join("")}`,
    );
  return { id: answer.id, itemCount: answer.itemCount, read: () => api.getJob(answer.id) };
}

/** The jobs API of the app, through the first live instance serving HTTP (none yet: undefined). */
export function jobsApiOf(instances: readonly InstanceProcess[]): JobsHttpApi {
  return new JobsHttpApi(() => {
    const serving = instances.find((instance) => instance.alive && instance.state.httpPort !== undefined);
    return serving?.state.httpPort === undefined
      ? undefined
      : jobsBaseUrl(serving.state.httpPort, serving.state.httpRoutes ?? []);
  });
}

/** What an instance process needs to load the user's app: its entry, its host.json, its project folder. */
export function appEnv(appEntry: string, hostJsonPath: string | undefined, projectDir: string): Record<string, string> {
  return {
    LOCAL_APP_ENTRY: resolve(appEntry),
    LOCAL_HOST_JSON: hostJsonPath === undefined ? "" : resolve(hostJsonPath),
    LOCAL_PROJECT_DIR: projectDir,
  };
}

/** The run's leadership timeline, as an SVG file. */
export function writeTimeline(
  path: string,
  events: EventLog,
  run: { instanceCount: number; apps: number; schedule: string },
): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(
    path,
    renderTimeline(events.records, {
      title: `Leadership timeline — ${run.instanceCount} instances (${run.apps > 1 ? `${run.apps} apps` : "one app"}), schedule "${run.schedule}"`,
    }),
  );
}
