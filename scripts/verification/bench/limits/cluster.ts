import type { CoordinatorApp } from "../../../../src/app/context";
import { startAzurite, type Azurite } from "../../../../dev/src/local/azurite";
import { InstanceProcess, type InstanceHandlers } from "../../../../dev/src/local/instances";
import { JobsHttpApi } from "../../../../src/cli/jobsHttpApi";
import { jobsBaseUrl } from "../../../../dev/src/local/instanceUrls";
import { instanceEnv, waitForReady } from "../../../../dev/src/local/startup";
import { ensureAppStorage } from "../../../../dev/src/local/storageSetup";
import { REPO_APP } from "../../../support/repoApp";
import { createRepoApp } from "../../../support/repoKinds";

/**
 * What every measurement of `npm run bench:limits` that needs the real app runs on: a persistent Azurite (the
 * throughput bench's reason: in memory, its queue GC stalls after some thousands of messages) and N instance processes
 * of this repository's app on the local host, at the app's settings — the same pieces as `npm run local` and the other
 * benchmarks. A client on the same storage submits and reads jobs through the library; `httpApis` are the instances'
 * own job routes.
 */
export class BenchCluster {
  private constructor(
    readonly azurite: Azurite,
    readonly env: Record<string, string | undefined>,
    readonly instances: InstanceProcess[],
  ) {}

  /** Starts Azurite and the instances; resolves once every instance serves. */
  static async start(options: {
    instances: number;
    schedule: string;
    abortSignal: AbortSignal;
  }): Promise<BenchCluster> {
    const azurite = await startAzurite({ persistent: true });
    const instances: InstanceProcess[] = [];
    try {
      const { env, settings } = instanceEnv(process.env, azurite.connectionString, options.schedule);
      await ensureAppStorage(azurite.connectionString, settings);
      const quiet: InstanceHandlers = {
        onEvent: () => undefined,
        onLog: () => undefined,
        onReady: () => undefined,
        onExit: () => undefined,
      };
      for (let index = 1; index <= options.instances; index++)
        instances.push(new InstanceProcess(`instance-${index}`, { ...REPO_APP, ...env }, quiet));
      await waitForReady(instances, options.abortSignal);
      return new BenchCluster(azurite, env, instances);
    } catch (error) {
      await Promise.all(instances.map((instance) => instance.stop(35_000)));
      await azurite.stop();
      throw error;
    }
  }

  /** A client of the coordinator on the cluster's storage, as `name` (not an instance: it runs no step). */
  client(name: string): CoordinatorApp {
    return createRepoApp({ ...this.env, WEBSITE_INSTANCE_ID: name });
  }

  /** Each live instance's job routes over HTTP, as a deployed app's clients use them. */
  httpApis(): JobsHttpApi[] {
    return this.instances.flatMap((instance) => {
      const { httpPort, httpRoutes } = instance.state;
      const base = httpPort === undefined ? undefined : jobsBaseUrl(httpPort, httpRoutes ?? []);
      return base === undefined ? [] : [new JobsHttpApi(() => base)];
    });
  }

  /** Stops the instances gracefully, then Azurite. */
  async stop(): Promise<void> {
    await Promise.all(this.instances.map((instance) => instance.stop(35_000)));
    await this.azurite.stop();
  }
}
