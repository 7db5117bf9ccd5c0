import { availableParallelism } from "node:os";

/**
 * What the Functions host's queue defaults depend on besides host.json: the instance's processor count and its SKU.
 * The queues extension (5.x) defaults `newBatchThreshold` to `batchSize / 2` times the processor count, except on a
 * Dynamic SKU (`WEBSITE_SKU=Dynamic`, the Consumption plan), where the count is taken as 1; Flex Consumption's SKU is
 * not Dynamic. Measured on the real extension by `npm run conformance:host` (row `queue.default-threshold`).
 */

/** Where the host runs. */
export interface HostPlatform {
  /** Processors the process may use (.NET's Environment.ProcessorCount; Node's availableParallelism). */
  processorCount: number;
  /** The WEBSITE_SKU app setting. */
  websiteSku?: string;
}

/** This process's platform: its processors and the WEBSITE_SKU of `env`. */
export function currentPlatform(env: Record<string, string | undefined> = process.env): HostPlatform {
  return { processorCount: availableParallelism(), websiteSku: env.WEBSITE_SKU };
}

/** True on a Dynamic SKU, where the queue defaults count one processor. */
export function isDynamicSku(platform: HostPlatform): boolean {
  return platform.websiteSku?.toLowerCase() === "dynamic";
}

/** The queues extension's `newBatchThreshold` when host.json leaves it out (integer division, as in .NET). */
export function defaultNewBatchThreshold(batchSize: number, platform: HostPlatform): number {
  return Math.floor(batchSize / 2) * (isDynamicSku(platform) ? 1 : Math.max(1, platform.processorCount));
}
