import type { HarnessFunction } from "./hostProcess";

/**
 * One host process of a scenario, described once for both sides: the SDK's settings file (sdkHost.ts) and the local
 * host's environment and host.json (localHost.ts) are made from it.
 */
export interface HostSpec {
  /** The app's host id: the listener locks and schedule statuses are under it. */
  hostId: string;
  /** The functions that run; the others are disabled. */
  functions: readonly HarnessFunction[];
  workQueue?: string;
  /** Where Work's output goes. @default `<workQueue>-out` */
  outQueue?: string;
  /** The timers' schedule. @default once a year */
  schedule?: string;
  /** host.json `extensions.queues`; unset values are each host's default. */
  queues?: {
    batchSize?: number;
    newBatchThreshold?: number;
    maxDequeueCount?: number;
    visibilityTimeoutMs?: number;
    maxPollingIntervalMs?: number;
  };
  /** host.json `singleton`: the listener lock's period and recovery polling, s. @default the hosts' (60, 60) */
  singleton?: { periodS: number; recoveryS: number };
  /** How long each timer invocation takes, ms. @default 0 */
  tickWorkMs?: number;
  /** The WEBSITE_SKU app setting. @default unset */
  websiteSku?: string;
}
