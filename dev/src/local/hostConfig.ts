import { existsSync, readFileSync } from "node:fs";
import {
  currentPlatform,
  defaultNewBatchThreshold,
  parseTimeSpanMs,
  type HostPlatform,
  type MessageEncoding,
} from "azure-leader-coordinator/internal";
import {
  HOST_LISTENER_LOCK_DEFAULTS,
  validateListenerLockSettings,
  type ListenerLockSettings,
} from "./listenerLock.js";

/**
 * The host.json settings the local host honours, with the Functions defaults (queues extension 5.x:
 * https://learn.microsoft.com/azure/azure-functions/functions-bindings-storage-queue#host-json).
 */

/** `extensions.queues`, resolved. */
export interface QueueSettings {
  /** Messages fetched per poll, 1–32. @default 16 */
  batchSize: number;
  /**
   * Fetch the next batch when this many or fewer are still running. @default batchSize / 2 × the processor count, or
   * batchSize / 2 where WEBSITE_SKU is Dynamic (the queues extension's rule: `app/hostPlatform.ts`)
   */
  newBatchThreshold: number;
  /** Attempts before a message moves to `<queue>-poison`. @default 5 */
  maxDequeueCount: number;
  /** How long a failed message stays invisible before its retry, in ms. @default 0 */
  visibilityTimeoutMs: number;
  /** Longest wait between polls of an empty queue, in ms (at least 100). @default 60000 */
  maxPollingIntervalMs: number;
  /** Encoding of message bodies on the queue. @default "base64" */
  messageEncoding: MessageEncoding;
}

/** What the local host reads from host.json. */
export interface HostConfig {
  queues: QueueSettings;
  /** `extensions.http.routePrefix`. @default "api" */
  httpRoutePrefix: string;
  /** `singleton`: the timer listener lock's periods. @default the host's (60 s, 60 s) */
  singleton: ListenerLockSettings;
}

/** host.json, partially: only the parts read here. Values may be any JSON until validated. */
interface HostJson {
  extensions?: { queues?: Record<string, unknown>; http?: Record<string, unknown> };
  singleton?: Record<string, unknown>;
}

/** The shortest `singleton.listenerLockRecoveryPollingInterval` the host accepts (its SingletonOptions), ms. */
const MIN_RECOVERY_POLLING_MS = 15_000;

/**
 * Reads host.json (absent file: all defaults) and applies `overrides` on top (tests use them for short timings, and
 * the singleton overrides may be shorter than host.json may say). `platform` sets the default newBatchThreshold.
 *
 * @throws Error naming the setting and what is allowed.
 */
export function readHostConfig(
  hostJsonPath: string | undefined,
  overrides: Partial<QueueSettings> = {},
  singletonOverrides: Partial<ListenerLockSettings> = {},
  platform: HostPlatform = currentPlatform(),
): HostConfig {
  const json: HostJson =
    hostJsonPath !== undefined && existsSync(hostJsonPath)
      ? (JSON.parse(readFileSync(hostJsonPath, "utf8")) as HostJson)
      : {};
  const raw = json.extensions?.queues ?? {};
  const batchSize = overrides.batchSize ?? intSetting(raw, "batchSize", 1, 32, 16);
  const queues: QueueSettings = {
    batchSize,
    newBatchThreshold:
      overrides.newBatchThreshold ??
      intSetting(raw, "newBatchThreshold", 0, 1000, defaultNewBatchThreshold(batchSize, platform)),
    maxDequeueCount: overrides.maxDequeueCount ?? intSetting(raw, "maxDequeueCount", 1, 1000, 5),
    visibilityTimeoutMs: overrides.visibilityTimeoutMs ?? durationSetting(raw, "visibilityTimeout", 0, 0),
    maxPollingIntervalMs: overrides.maxPollingIntervalMs ?? durationSetting(raw, "maxPollingInterval", 100, 60_000),
    messageEncoding: overrides.messageEncoding ?? encodingSetting(raw),
  };
  const routePrefix = json.extensions?.http?.routePrefix;
  if (routePrefix !== undefined && typeof routePrefix !== "string")
    throw new Error("host.json extensions.http.routePrefix must be a string.");
  const singletonJson = json.singleton ?? {};
  const recoveryJsonMs = durationSetting(
    singletonJson,
    "listenerLockRecoveryPollingInterval",
    0,
    HOST_LISTENER_LOCK_DEFAULTS.listenerLockRecoveryPollingIntervalMs,
    "singleton",
  );
  // The host's SingletonOptions throw below 15 s, so the host would not start (conformance row
  // host-json.recovery-minimum); the local overrides, for tests and short runs, may go lower.
  if (recoveryJsonMs < MIN_RECOVERY_POLLING_MS)
    throw new Error(
      `host.json singleton.listenerLockRecoveryPollingInterval must be at least ${MIN_RECOVERY_POLLING_MS / 1000} seconds (the Functions host refuses to start with less), got ${recoveryJsonMs / 1000} s.`,
    );
  const singleton = validateListenerLockSettings({
    listenerLockPeriodMs:
      singletonOverrides.listenerLockPeriodMs ??
      durationSetting(
        singletonJson,
        "listenerLockPeriod",
        0,
        HOST_LISTENER_LOCK_DEFAULTS.listenerLockPeriodMs,
        "singleton",
      ),
    listenerLockRecoveryPollingIntervalMs: singletonOverrides.listenerLockRecoveryPollingIntervalMs ?? recoveryJsonMs,
  });
  return { queues, httpRoutePrefix: (routePrefix ?? "api").replace(/^\/+|\/+$/g, ""), singleton };
}

function intSetting(raw: Record<string, unknown>, name: string, min: number, max: number, fallback: number): number {
  const value = raw[name];
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new Error(
      `host.json extensions.queues.${name} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}.`,
    );
  }
  return value;
}

/** A TimeSpan string ("00:00:02") or, as older host.json files wrote it, a number of ms. */
function durationSetting(
  raw: Record<string, unknown>,
  name: string,
  minMs: number,
  fallbackMs: number,
  section = "extensions.queues",
): number {
  const value = raw[name];
  if (value === undefined) return fallbackMs;
  const ms = typeof value === "number" ? value : typeof value === "string" ? parseTimeSpanMs(value) : undefined;
  if (ms === undefined || !Number.isFinite(ms) || ms < minMs) {
    throw new Error(
      `host.json ${section}.${name} must be a TimeSpan such as "00:00:02" (at least ${minMs} ms), got ${JSON.stringify(value)}.`,
    );
  }
  return ms;
}

function encodingSetting(raw: Record<string, unknown>): MessageEncoding {
  const value = raw.messageEncoding ?? "base64";
  if (typeof value === "string" && (value.toLowerCase() === "base64" || value.toLowerCase() === "none"))
    return value.toLowerCase() as MessageEncoding;
  throw new Error(
    `host.json extensions.queues.messageEncoding must be "base64" or "none", got ${JSON.stringify(value)}.`,
  );
}
