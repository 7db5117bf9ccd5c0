import { existsSync, readFileSync } from "node:fs";
import { MAX_DEQUEUE_COUNT } from "./context.js";
import { currentPlatform, defaultNewBatchThreshold, type HostPlatform } from "./hostPlatform.js";
import { parseTimeSpanMs } from "./timeSpan.js";

/**
 * The host.json settings the coordinator relies on (docs/HOST-JSON.md), checked: what a host.json lacks or sets against
 * the coordinator, each with what it costs. `azure-leader-coordinator-dev local` prints the findings at start, and the
 * app logs them at its first tick. A check, not a refusal: the app runs with any host.json, only slower or less safely.
 */

/** One setting a host.json lacks or sets against the coordinator. */
export interface HostJsonFinding {
  /** The setting's path in host.json, e.g. `extensions.queues.maxPollingInterval` (or `host.json` for the file). */
  readonly setting: string;
  /** What is wrong with it: "not set: …", "set to …". */
  readonly problem: string;
  /** What that costs the coordinator's users. */
  readonly cost: string;
  /** The value to put there. */
  readonly fix: string;
}

/** The longest polling interval that keeps "a job starts within about a second or two" true, in ms. */
const POLLING_LIMIT_MS = 5_000;
/** Work units an instance may hold at once (batchSize + newBatchThreshold) that WORK_UNIT_MAX_BYTES is sized for. */
const UNITS_IN_MEMORY = 24;

const POLLING_FIX = '"maxPollingInterval": "00:00:02"';

/**
 * Checks parsed host.json content; [] when it has everything the coordinator relies on. `platform` is where the host
 * runs (its processors and SKU set the default newBatchThreshold). @default this process's
 */
export function checkHostJson(json: unknown, platform: HostPlatform = currentPlatform()): HostJsonFinding[] {
  const queues = queuesOf(json);
  const findings: HostJsonFinding[] = [];
  const polling = queues.maxPollingInterval;
  const pollingMs =
    typeof polling === "string" ? parseTimeSpanMs(polling) : typeof polling === "number" ? polling : undefined;
  if (polling === undefined)
    findings.push({
      setting: "extensions.queues.maxPollingInterval",
      problem: "not set: the Functions host's default is 1 minute",
      cost: "an idle queue trigger polls only once a minute, so a job submitted to an idle app can start up to a minute late (its wake-up message waits), and work units and results wait as long between steps",
      fix: POLLING_FIX,
    });
  else if (pollingMs === undefined || pollingMs > POLLING_LIMIT_MS)
    findings.push({
      setting: "extensions.queues.maxPollingInterval",
      problem: `set to ${JSON.stringify(polling)}`,
      cost: `a job submitted to an idle app can start up to ${pollingMs === undefined ? "the host's interval" : `${Math.round(pollingMs / 1000)} s`} late, and work units and results wait as long between steps`,
      fix: POLLING_FIX,
    });
  if (queues.visibilityTimeout === undefined)
    findings.push({
      setting: "extensions.queues.visibilityTimeout",
      problem: "not set: the Functions host's default is 0",
      cost: "a work unit whose invocation failed is retried at once, all its deliveries within seconds, so a brief outage of what your kind calls fails its items",
      fix: '"visibilityTimeout": "00:00:05"',
    });
  if (queues.maxDequeueCount !== undefined && queues.maxDequeueCount !== MAX_DEQUEUE_COUNT)
    findings.push({
      setting: "extensions.queues.maxDequeueCount",
      problem: `set to ${JSON.stringify(queues.maxDequeueCount)}`,
      cost: `the worker treats delivery ${MAX_DEQUEUE_COUNT} as a unit's last: with fewer deliveries a unit that keeps failing goes to the poison queue before its items are recorded as failed, with more its items are failed while the host would still retry them`,
      fix: `"maxDequeueCount": ${MAX_DEQUEUE_COUNT} (or leave it out: ${MAX_DEQUEUE_COUNT} is the default)`,
    });
  const encoding = queues.messageEncoding;
  if (encoding !== undefined && (typeof encoding !== "string" || encoding.toLowerCase() !== "base64"))
    findings.push({
      setting: "extensions.queues.messageEncoding",
      problem: `set to ${JSON.stringify(encoding)}`,
      cost: "the coordinator writes its messages base64-encoded: the triggers would hand them over undecoded and every work unit, result and wake-up would fail",
      fix: '"messageEncoding": "base64" (or leave it out: base64 is the default)',
    });
  const concurrency = concurrencyFinding(queues, platform);
  if (concurrency !== undefined) findings.push(concurrency);
  return findings;
}

/**
 * More work units at once than WORK_UNIT_MAX_BYTES is sized for: a batch too big, or a newBatchThreshold left to the
 * host, whose default grows with the instance's processors (hostPlatform.ts).
 */
function concurrencyFinding(queues: Record<string, unknown>, platform: HostPlatform): HostJsonFinding | undefined {
  const batchSize = typeof queues.batchSize === "number" ? queues.batchSize : 16;
  const thresholdSet = typeof queues.newBatchThreshold === "number";
  const threshold = thresholdSet ? Number(queues.newBatchThreshold) : defaultNewBatchThreshold(batchSize, platform);
  const units = batchSize + threshold;
  if (units <= UNITS_IN_MEMORY) return undefined;
  const cost = `an instance may hold ${units} work units at once, and WORK_UNIT_MAX_BYTES is sized for ${UNITS_IN_MEMORY}: a busy instance can run out of memory`;
  // Within the bound at batchSize / 2: only the host's processor multiplier puts it over.
  if (!thresholdSet && batchSize + Math.floor(batchSize / 2) <= UNITS_IN_MEMORY)
    return {
      setting: "extensions.queues.newBatchThreshold",
      problem: `not set: the Functions host's default is batchSize / 2 × the instance's processor count (WEBSITE_SKU is not Dynamic), ${Math.floor(batchSize / 2)} × ${threshold / Math.floor(batchSize / 2)} = ${threshold} on this one: ${units} units at once`,
      cost,
      fix: `"newBatchThreshold": ${Math.min(Math.floor(batchSize / 2), UNITS_IN_MEMORY - batchSize)}`,
    };
  return {
    setting: "extensions.queues.batchSize",
    problem: `set to ${batchSize} (with newBatchThreshold ${threshold}: ${units} units at once)`,
    cost,
    fix: '"batchSize": 16 (the default) and "newBatchThreshold": 8',
  };
}

/** Reads and checks a host.json file; a missing or unparsable file is a finding too. */
export function checkHostJsonFile(path: string, platform: HostPlatform = currentPlatform()): HostJsonFinding[] {
  if (!existsSync(path))
    return [
      {
        setting: "host.json",
        problem: `not found at ${path}`,
        cost: "every queue setting is the Functions host's default: a job can start up to a minute late, and a failed work unit is retried at once",
        fix: "a host.json beside your app's package.json (see docs/HOST-JSON.md)",
      },
    ];
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    return [
      {
        setting: "host.json",
        problem: `is not JSON (${(error as Error).message})`,
        cost: "the Functions host refuses to start",
        fix: "valid JSON (see docs/HOST-JSON.md)",
      },
    ];
  }
  return checkHostJson(json, platform);
}

/** One plain message for people: which settings `path` lacks, what each costs, what to set. */
export function describeHostJsonFindings(findings: readonly HostJsonFinding[], path: string): string {
  const lines = findings.map(
    (finding) => `  - ${finding.setting}: ${finding.problem}. Cost: ${finding.cost}. Set ${finding.fix}.`,
  );
  return `${path} lacks settings the coordinator relies on (docs/HOST-JSON.md in azure-leader-coordinator):\n${lines.join("\n")}`;
}

/** `extensions.queues` of a host.json, or {} when it has none. */
function queuesOf(json: unknown): Record<string, unknown> {
  if (typeof json !== "object" || json === null) return {};
  const extensions = (json as { extensions?: unknown }).extensions;
  if (typeof extensions !== "object" || extensions === null) return {};
  const queues = (extensions as { queues?: unknown }).queues;
  return typeof queues === "object" && queues !== null ? (queues as Record<string, unknown>) : {};
}
