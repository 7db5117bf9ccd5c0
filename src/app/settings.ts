import { z } from "zod";
import { ConfigurationError } from "../library/errors.js";
import { leaseTimingProblems } from "../library/leadership/options.js";
import {
  AZURE_CONTAINER_OR_QUEUE_NAME,
  AZURE_CONTAINER_OR_QUEUE_NAME_RULE,
  BLOB_DOT_SEGMENT_RULE,
  hasDotSegment,
} from "../azure/azureNames.js";
import { keys } from "../coordination/state/jobState.js";
import { TERMS_KEY } from "../coordination/state/termHistory.js";
import type { SettingName } from "./options.js";
import { parseNcrontab } from "./schedule.js";

/**
 * Every app setting the app reads, with its default and validation, in one place.
 *
 * The Bicep templates in `infra/` set exactly these names (a test proves the two sets are equal), so a rename
 * here that is not made there fails CI instead of silently breaking a deployment.
 */

/** Azure container names: 3–63 chars, lowercase letters, digits and single hyphens, starting with a letter or digit. */
const containerName = z.string().regex(AZURE_CONTAINER_OR_QUEUE_NAME, `must be ${AZURE_CONTAINER_OR_QUEUE_NAME_RULE}`);
/** Azure queue names follow the same rule as container names. */
const queueName = containerName;
/** Blob names: 1–1024 characters, no trailing dot or slash, no "." or ".." segment (it would name another blob). */
const blobName = z
  .string()
  .min(1)
  .max(1024)
  .regex(/[^./]$/, "must not end with '.' or '/'")
  .refine((name) => !hasDotSegment(name), `must name a blob in its container: ${BLOB_DOT_SEGMENT_RULE}`);

const intIn = (min: number, max: number) =>
  z.coerce
    .number()
    .int(`must be a whole number from ${min} to ${max}`)
    .min(min, `must be from ${min} to ${max}`)
    .max(max, `must be from ${min} to ${max}`);

/**
 * NCRONTAB with six fields, seconds first, as the Functions host parses a timer's schedule (see `schedule.ts`); a
 * `%AppSetting%` reference is not allowed here: this IS the setting.
 */
const ncrontab = z
  .string()
  .trim()
  .superRefine((value, context) => {
    const parsed = parseNcrontab(value);
    if (!parsed.ok) context.addIssue({ code: "custom", message: parsed.reason });
  });

/**
 * The settings schema. Keys are the app setting names exactly as they appear in Azure and in `local.settings.json`.
 * Connection settings are described separately in {@link CONNECTION_SETTINGS} because Functions resolves them by
 * prefix.
 */
export const settingsSchema = z.object({
  /**
   * Timer schedule of the `coordinator` function: the heartbeat that guarantees progress. Submissions wake the
   * coordinator through WAKE_QUEUE, so a new job does not wait for it. @default every minute
   */
  COORDINATOR_SCHEDULE: ncrontab.default("0 * * * * *"),
  /** Container of the leader lease blob. @default "leases" */
  LEASE_CONTAINER: containerName.default("leases"),
  /** Name of the leader lease blob. @default "MyLeaderCoordinatorTask" */
  LEASE_BLOB: blobName.default("MyLeaderCoordinatorTask"),
  /** Blob lease duration in seconds (Azure allows 15–60). @default 15 */
  LEASE_DURATION_SECONDS: intIn(15, 60).default(15),
  /** How often the leader renews, in ms. Must be below LEASE_RENEW_DEADLINE_MS. @default 3000 */
  LEASE_RENEW_INTERVAL_MS: intIn(500, 59_000).default(3000),
  /**
   * Local renew deadline in ms: the leader stops if it could not renew for this long. At most 90 % of the lease
   * duration, so a leader whose clock runs 10 % slow still stops before its lease can expire. @default 10000
   */
  LEASE_RENEW_DEADLINE_MS: intIn(1000, 54_000).default(10_000),
  /**
   * Takeover below the lease (docs/explanation/failover.md): the leader stops when no heartbeat has succeeded for this
   * long, in ms, and another instance that has seen its record unchanged for longer (3.1 s at the default, margins
   * included) breaks its lease and takes over — a crashed leader is replaced in seconds, not at its lease's expiry.
   * Above LEASE_HEARTBEAT_INTERVAL_MS and below LEASE_RENEW_DEADLINE_MS; 0 turns takeover off (heartbeats too). A
   * shorter deadline fails over faster and ends terms on shorter storage trouble. @default 2500
   */
  LEASE_TAKEOVER_DEADLINE_MS: intIn(0, 53_000).default(2500),
  /**
   * How often the leader heartbeats (rewrites its record; one storage operation), in ms. Below
   * LEASE_TAKEOVER_DEADLINE_MS: heartbeats that each take less than the smaller of their difference and half the
   * deadline (1.25 s at the defaults) never end the term. @default 1000
   */
  LEASE_HEARTBEAT_INTERVAL_MS: intIn(100, 53_000).default(1000),
  /**
   * With takeover: how often a process that ran a worker or wake-up invocation in the last three lease durations reads
   * the lease, in ms, to notice a leader that fell silent and break its lease (then one wake-up starts the next step).
   * 0 turns the watcher off (the timer, wake-ups and their follow-ups still take over, at their own pace).
   * @default 1000
   */
  LEADER_WATCH_INTERVAL_MS: intIn(0, 60_000)
    .refine((ms) => ms === 0 || ms >= 250, "must be 0 (off) or from 250 to 60000")
    .default(1000),
  /**
   * The leader's sentinel, in seconds (docs/explanation/failover.md): while its step has active jobs, the leader keeps
   * one wake-up hidden on WAKE_QUEUE and hides it again every half of this. A leader that dies stops hiding it, so
   * within this long another instance wakes up and looks — even when none was busy — and a step that ends with jobs
   * left lets it start the next step. One queue operation per half interval while leading active jobs; nothing when
   * idle. 0 turns it off (wake-ups that find the lease held then send follow-ups instead). @default 2
   */
  LEADER_SENTINEL_SECONDS: intIn(0, 60).default(2),
  /** Container for the coordinator's fenced state (jobs, progress, aggregates). @default "coordinator-state" */
  STATE_CONTAINER: containerName.default("coordinator-state"),
  /**
   * The user's container of job inputs: items and manifests name blobs in it. The app only reads it (never writes,
   * creates or deletes anything there). @default "job-inputs"
   */
  INPUT_CONTAINER: containerName.default("job-inputs"),
  /**
   * The app's own blobs: job specs, item chunks, inbox markers, large partial results. @default "coordinator-system"
   */
  SYSTEM_CONTAINER: containerName.default("coordinator-system"),
  /** Queue the leader dispatches work items to; the `worker` function listens on it. @default "work-items" */
  WORK_QUEUE: queueName.default("work-items"),
  /** Queue workers report results on; the leader folds them. @default "work-results" */
  RESULTS_QUEUE: queueName.default("work-results"),
  /**
   * Control queue of wake-ups: each submission sends one message; the `wake` function makes one leadership attempt
   * and runs a step, as a timer tick does. @default "coordinator-wake"
   */
  WAKE_QUEUE: queueName.default("coordinator-wake"),
  /**
   * Wake-ups from queue activity, in ms: a worker that sent a result (or poison) sends a wake-up at most this often
   * per process, and a wake-up that finds the lease held sends one follow-up a lease duration later (at most this often
   * per process, at most 3 in a chain), so a job keeps moving between timer ticks and after its leader died. 0 turns
   * both off (the timer and submissions alone start steps). @default 5000
   */
  ACTIVITY_WAKE_INTERVAL_MS: intIn(0, 600_000).default(5000),
  /**
   * Time budget of one coordination step in ms; below the shortest interval between two firings of
   * COORDINATOR_SCHEDULE. @default 20000
   */
  STEP_BUDGET_MS: intIn(1000, 600_000).default(20_000),
  /**
   * Most items the leader dispatches per pass of its step (bounded fan-out); at most twice this many items of a job are
   * on the queue without a result (whole units: the last may go past). Sized so the work queue stays ahead of the
   * workers while the leader folds; a job's units are also sized to spread this window (WORK_UNIT_SPREAD).
   * @default 8192
   */
  DISPATCH_BATCH_SIZE: intIn(1, 10_000).default(8192),
  /**
   * Items of one work unit a worker processes at once, for task kinds that do not set their own `concurrency`. Raise it
   * for I/O-bound kinds; each item in flight holds its input (up to MAX_INPUT_BLOB_BYTES). @default 1
   */
  WORK_UNIT_CONCURRENCY: intIn(1, 64).default(1),
  /**
   * Most items one work message (a unit) carries; 1 sends one item per message. A job's units carry as many inline
   * items as fit WORK_UNIT_MAX_BYTES up to this, fewer when the job is small or names blobs
   * (coordination/jobs/unitSize.ts); fixed per job when it registers. @default 1000
   */
  WORK_UNIT_MAX_ITEMS: intIn(1, 1_000).default(1000),
  /**
   * Most items one work message carries when its job names input blobs (each a read the worker waits for, and up to
   * MAX_INPUT_BLOB_BYTES of text it holds). @default 32
   */
  WORK_UNIT_MAX_BLOB_ITEMS: intIn(1, 1_000).default(32),
  /**
   * Units a job's in-flight window (its items, or twice DISPATCH_BATCH_SIZE if fewer) is cut into, so a small job still
   * reaches several workers and fits one queue batch (host.json batchSize, the default). @default 16
   */
  WORK_UNIT_SPREAD: intIn(1, 1_000).default(16),
  /**
   * Most bytes of JSON one work message holds; its base64 form, with the queue's envelope, must fit 64 KiB. A single
   * item larger than this still goes alone. @default 46080
   */
  WORK_UNIT_MAX_BYTES: intIn(1024, 47 * 1024).default(45 * 1024),
  /**
   * Most groups a job's aggregate may hold; a job that would exceed it ends as failed with the reason. @default 200000
   */
  MAX_AGGREGATE_GROUPS: intIn(1, 2_000_000).default(200_000),
  /**
   * Most bytes of an input blob (an item's `{"blob": …}`) a worker reads; an item naming a larger blob fails alone,
   * with its size and this limit, before any of it is downloaded. A worker holds the text of each blob it processes
   * (with a unit's partial result) while other invocations of its process run: sized so that a 2 GB Flex Consumption
   * instance (a Node heap of 512 MB–1 GB) survives 24 concurrent work units (host.json: batchSize 16 +
   * newBatchThreshold 8) each at the limit, in the worst case measured (see the README's limits). @default 4194304
   */
  MAX_INPUT_BLOB_BYTES: intIn(1024, 256 * 1024 * 1024).default(4 * 1024 * 1024),
  /**
   * Most bytes of JSON a job's stored document (its state: counts, bitmaps, failures and aggregate) may have; a job
   * whose aggregate would make it larger ends as failed with the reason, its counts and aggregate as they were. The
   * leader reads and writes the whole document at every fold of the job's results: 16 MiB holds the largest job the
   * limits allow (1,000,000 items, 200,000 groups with keys of some 40 characters: about 7.8 MiB) twice over, and
   * parses in well under a second. @default 16777216
   */
  MAX_JOB_DOCUMENT_BYTES: intIn(1024 * 1024, 64 * 1024 * 1024).default(16 * 1024 * 1024),
  /**
   * How long an ended job (completed, failed, cancelled, expired) is kept, in hours: its status reads as before for
   * this long after it ended; then the leader removes everything of it — state, spec, item chunks, outcome blobs,
   * markers — and GET /api/jobs/{id} answers 404. @default 168 (7 days)
   */
  JOB_RETENTION_HOURS: intIn(1, 8760).default(168),
  /**
   * How long a unit's grant under a kind's or a job's limits lasts, in seconds: its worker starts no item after it. A
   * unit whose process died holds its shares this long (and 60 s) before it runs again; a unit whose grant expires gets
   * one twice as long. Keep it above the time a unit's items take at their limits. @default 600 (the host's visibility
   * timeout of a message it runs)
   */
  FLOW_GRANT_SECONDS: intIn(30, 3600).default(600),
  /** Leader gives up leadership when its step reports no progress for this long, in ms. @default 60000 */
  STEP_STALL_TIMEOUT_MS: intIn(1000, 3_600_000).default(60_000),
} satisfies Record<SettingName, z.ZodType>);

/** The validated settings. */
export type Settings = z.infer<typeof settingsSchema>;

/**
 * Identity-based connection settings, resolved by prefix (`<PREFIX>__blobServiceUri`, …) as the Functions host does.
 * Locally (Azurite) the bare prefix holds a connection string instead.
 */
export const CONNECTION_SETTINGS = {
  /** The coordination storage account: lease blob, state, work and results queues. Shared by every region. */
  coordination: "COORDINATION_STORAGE",
} as const;

/** Suffixes of an identity-based connection that this app reads or the host reads for it. */
export const IDENTITY_CONNECTION_SUFFIXES = ["blobServiceUri", "queueServiceUri", "credential", "clientId"] as const;

/** Every app setting name the app itself reads (not the host's own AzureWebJobsStorage, FUNCTIONS_* settings). */
export const APP_SETTING_NAMES: readonly string[] = [
  ...Object.keys(settingsSchema.shape),
  ...IDENTITY_CONNECTION_SUFFIXES.map((suffix) => `${CONNECTION_SETTINGS.coordination}__${suffix}`),
];

/**
 * Reads and validates the settings from an environment (by default `process.env`).
 *
 * @throws ConfigurationError naming every invalid setting, its value and what is allowed.
 */
export function readSettings(env: Record<string, string | undefined> = process.env): Settings {
  const raw: Record<string, string> = {};
  for (const name of Object.keys(settingsSchema.shape)) {
    const value = env[name];
    if (value !== undefined && value.trim() !== "") raw[name] = value.trim();
  }
  const parsed = settingsSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      return `${name}=${JSON.stringify(raw[name])} ${issue.message}`;
    });
    throw new ConfigurationError(`Invalid app settings: ${problems.join("; ")}.`);
  }
  const settings = parsed.data;
  const takeover = settings.LEASE_TAKEOVER_DEADLINE_MS > 0;
  const timing = leaseTimingProblems(
    {
      leaseDurationS: settings.LEASE_DURATION_SECONDS,
      renewIntervalMs: settings.LEASE_RENEW_INTERVAL_MS,
      renewDeadlineMs: settings.LEASE_RENEW_DEADLINE_MS,
      ...(takeover
        ? {
            heartbeatIntervalMs: settings.LEASE_HEARTBEAT_INTERVAL_MS,
            takeoverDeadlineMs: settings.LEASE_TAKEOVER_DEADLINE_MS,
          }
        : {}),
    },
    {
      leaseDurationS: "LEASE_DURATION_SECONDS × 1000",
      renewIntervalMs: "LEASE_RENEW_INTERVAL_MS",
      renewDeadlineMs: "LEASE_RENEW_DEADLINE_MS",
      heartbeatIntervalMs: "LEASE_HEARTBEAT_INTERVAL_MS",
      takeoverDeadlineMs: "LEASE_TAKEOVER_DEADLINE_MS",
    },
  );
  const problems = [
    ...timing,
    ...budgetProblems(settings),
    ...poisonNameProblems(settings),
    ...containerProblems(settings),
    ...queueProblems(settings),
  ];
  if (problems.length > 0) throw new ConfigurationError(`Invalid app settings: ${problems.join("; ")}.`);
  return settings;
}

/** A step must end before the timer's next tick starts one: STEP_BUDGET_MS below the schedule's shortest interval. */
function budgetProblems(settings: Settings): string[] {
  const parsed = parseNcrontab(settings.COORDINATOR_SCHEDULE);
  if (!parsed.ok || settings.STEP_BUDGET_MS < parsed.schedule.shortestIntervalMs) return [];
  return [
    `STEP_BUDGET_MS (${settings.STEP_BUDGET_MS}) must be below the shortest interval of COORDINATOR_SCHEDULE ("${settings.COORDINATOR_SCHEDULE}" fires ${parsed.schedule.shortestIntervalMs} ms apart at its closest): a step must end before the next tick starts one`,
  ];
}

/** What the Functions host appends to a queue's name for its poison queue (`<name>-poison`). */
const POISON_SUFFIX = "-poison";

/** The poison queue of a queue: where the Functions host moves a message after its last failed delivery. */
export function poisonQueueOf(queue: string): string {
  return `${queue}${POISON_SUFFIX}`;
}

/** Longest queue name whose poison queue is still a valid queue name (63 characters at most). */
export const MAX_POISONED_QUEUE_NAME_LENGTH = 63 - POISON_SUFFIX.length;

/** WORK_QUEUE and RESULTS_QUEUE have poison queues (RESULTS_QUEUE's is the leader's): their names must be valid too. */
function poisonNameProblems(settings: Settings): string[] {
  return (["WORK_QUEUE", "RESULTS_QUEUE"] as const)
    .filter((name) => settings[name].length > MAX_POISONED_QUEUE_NAME_LENGTH)
    .map((name) => {
      const value = settings[name];
      return `${name}="${value}" is ${value.length} characters: failed messages go to "${poisonQueueOf(value)}", ${poisonQueueOf(value).length} characters, and a queue name may have at most 63; use at most ${MAX_POISONED_QUEUE_NAME_LENGTH} characters`;
    });
}

/**
 * Blob names the app itself uses in the state and the system container (see `keys` in `coordination/state/jobState.ts`
 * and `TERMS_KEY`): the lease blob may share either container only outside them.
 */
export const APP_BLOB_NAMES = {
  STATE_CONTAINER: { names: [keys.index, TERMS_KEY], prefixes: ["jobs/"] },
  SYSTEM_CONTAINER: { names: [], prefixes: ["jobs/", keys.inboxPrefix, keys.cancelPrefix, keys.endedPrefix] },
} as const;

/** Whether the app itself uses `blob` in the state or the system container ({@link APP_BLOB_NAMES}). */
export function isAppBlobName(container: keyof typeof APP_BLOB_NAMES, blob: string): boolean {
  const { names, prefixes } = APP_BLOB_NAMES[container];
  return (names as readonly string[]).includes(blob) || prefixes.some((prefix) => blob.startsWith(prefix));
}

/**
 * The input container is the user's: the app only reads it, so none of the containers it writes may be it. The lease
 * blob (and its `.revocation` sibling) may share the state or the system container, but not a name the app uses there.
 */
function containerProblems(settings: Settings): string[] {
  const problems: string[] = [];
  for (const name of ["LEASE_CONTAINER", "STATE_CONTAINER", "SYSTEM_CONTAINER"] as const)
    if (settings[name] === settings.INPUT_CONTAINER)
      problems.push(
        `${name}="${settings[name]}" is also INPUT_CONTAINER: the input container is the user's, which the app only reads, and the app writes and deletes blobs in ${name}; LEASE_CONTAINER, STATE_CONTAINER and SYSTEM_CONTAINER must each name another container`,
      );
  const leaseBlobs = [settings.LEASE_BLOB, `${settings.LEASE_BLOB}.revocation`];
  for (const shared of ["STATE_CONTAINER", "SYSTEM_CONTAINER"] as const) {
    if (settings[shared] !== settings.LEASE_CONTAINER) continue;
    const { names, prefixes } = APP_BLOB_NAMES[shared];
    if (leaseBlobs.some((blob) => isAppBlobName(shared, blob)))
      problems.push(
        `LEASE_BLOB="${settings.LEASE_BLOB}" in LEASE_CONTAINER="${settings.LEASE_CONTAINER}", which is also ${shared}, where the app writes and deletes ${[...names, ...prefixes.map((prefix) => `${prefix}…`)].join(", ")}: name the lease blob outside those (as the default "MyLeaderCoordinatorTask" is), or give LEASE_CONTAINER a container of its own`,
      );
  }
  return problems;
}

/**
 * Each queue function needs its queue to itself: the worker (WORK_QUEUE), the leader's results (RESULTS_QUEUE), the
 * wake-ups (WAKE_QUEUE), and the poison queues of the first two, which the leader reads. Two of them on one queue
 * means one takes the other's messages (results dropped as bad wake-ups, poison taken for work): jobs never end.
 */
function queueProblems(settings: Settings): string[] {
  const queues = [
    { name: settings.WORK_QUEUE, what: "WORK_QUEUE", setting: true },
    { name: poisonQueueOf(settings.WORK_QUEUE), what: "the poison queue of WORK_QUEUE", setting: false },
    { name: settings.RESULTS_QUEUE, what: "RESULTS_QUEUE", setting: true },
    { name: poisonQueueOf(settings.RESULTS_QUEUE), what: "the poison queue of RESULTS_QUEUE", setting: false },
    { name: settings.WAKE_QUEUE, what: "WAKE_QUEUE", setting: true },
  ];
  const problems: string[] = [];
  for (const [later, b] of queues.entries())
    for (const a of queues.slice(0, later)) {
      // Two poison queues are the same only when their queues are: that pair is reported already.
      if (a.name !== b.name || (!a.setting && !b.setting)) continue;
      const [subject, other] = b.setting ? [b, a] : [a, b];
      problems.push(
        `${subject.what}="${subject.name}" is also ${other.what}: WORK_QUEUE, RESULTS_QUEUE and WAKE_QUEUE each need a queue of their own, and none may be another's <name>-poison queue (one would take the other's messages)`,
      );
    }
  return problems;
}
