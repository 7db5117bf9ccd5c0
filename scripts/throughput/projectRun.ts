import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { BlobServiceClient } from "@azure/storage-blob";
import { readSettings } from "../../src/config/settings";
import { keys } from "../../src/coordination/jobState";
import { runLocal } from "../local";
import { MemorySampler, type InstanceMemory } from "./memorySampler";

/**
 * One project run: the local runner's instance processes (the real Functions registrations through the host
 * emulator) on storage reached through the counting proxy, one demo job of `items` items. Times the job from its
 * submission (`createdAt`) to its completion (`completedAt`, written by the leader's last fold), samples the
 * instances' peak RSS, and reads the size of the job's state blob.
 */

/** Options of {@link runProject}. */
export interface ProjectRunOptions {
  /** Storage for the instances (through the proxy). */
  connectionString: string;
  /** Storage for the benchmark's own look at the state blob (Azurite directly, so it is not counted). */
  directConnectionString: string;
  items: number;
  instances: number;
  schedule: string;
  dispatchBatchSize: number;
  /** Where the runner's events, logs and timeline go. */
  outputDir: string;
  label: string;
  maxWaitS: number;
  abortSignal: AbortSignal;
}

/** What a project run measured. */
export interface ProjectRunResult {
  ok: boolean;
  problem: string | undefined;
  items: number;
  jobId: string | undefined;
  /** Submission (createdAt) and completion (completedAt), wall clock ms. */
  createdAtMs: number | undefined;
  completedAtMs: number | undefined;
  /** When the leader registered the job (its first step after the submission). */
  registeredAtMs: number | undefined;
  durationS: number | undefined;
  itemsPerS: number | undefined;
  /** Items per second from registration to completion (without the wait for the first timer tick). */
  itemsPerSAfterRegistration: number | undefined;
  /** The whole run (instances starting … stopped), s. */
  wallS: number;
  runStartMs: number;
  runEndMs: number;
  matches: boolean;
  instances: InstanceMemory[];
  stateBlobBytes: number | undefined;
  eventsPath: string;
}

/** Runs the project once. Never throws for a failed job: `ok` and `problem` say. */
export async function runProject(options: ProjectRunOptions): Promise<ProjectRunResult> {
  const eventsPath = join(options.outputDir, `events-${options.label}.jsonl`);
  const sampler = new MemorySampler(eventsPath);
  const env: Record<string, string | undefined> = {
    ...process.env,
    COORDINATION_STORAGE: options.connectionString,
    DISPATCH_BATCH_SIZE: String(options.dispatchBatchSize),
  };
  const runStartMs = Date.now();
  let result;
  try {
    result = await runLocal({
      instances: options.instances,
      schedule: options.schedule,
      items: options.items,
      env,
      live: "off",
      output: new Writable({ write: (_chunk, _encoding, done) => done() }),
      eventsPath,
      timelinePath: join(options.outputDir, `timeline-${options.label}.svg`),
      outputDir: options.outputDir,
      maxWaitS: options.maxWaitS,
      settleS: 1,
      abortSignal: options.abortSignal,
    });
  } finally {
    sampler.sample();
  }
  const runEndMs = Date.now();
  const instances = sampler.stop();
  const status = result.status;
  const createdAtMs = status === undefined ? undefined : Date.parse(status.createdAt);
  const completedAtMs = status?.completedAt === undefined ? undefined : Date.parse(status.completedAt);
  const registeredAtMs = result.jobId === undefined ? undefined : registrationTime(eventsPath, result.jobId);
  const durationS = createdAtMs !== undefined && completedAtMs !== undefined ? (completedAtMs - createdAtMs) / 1000 : undefined;
  const afterRegistrationS = registeredAtMs !== undefined && completedAtMs !== undefined ? (completedAtMs - registeredAtMs) / 1000 : undefined;
  const settings = readSettings(env);
  const stateBlobBytes = result.jobId === undefined ? undefined : await blobSize(options.directConnectionString, settings.STATE_CONTAINER, keys.jobState(result.jobId));
  return {
    ok: result.exitCode === 0,
    problem: result.problem,
    items: options.items,
    jobId: result.jobId,
    createdAtMs,
    completedAtMs,
    registeredAtMs,
    durationS,
    itemsPerS: durationS === undefined || durationS <= 0 ? undefined : options.items / durationS,
    itemsPerSAfterRegistration: afterRegistrationS === undefined || afterRegistrationS <= 0 ? undefined : options.items / afterRegistrationS,
    wallS: (runEndMs - runStartMs) / 1000,
    runStartMs,
    runEndMs,
    matches: result.matches,
    instances,
    stateBlobBytes,
    eventsPath,
  };
}

/** The time of the job's `job-registered` event, from the events file. */
function registrationTime(eventsPath: string, jobId: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(eventsPath, "utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    if (!line.includes("job-registered") || !line.includes(jobId)) continue;
    try {
      const record = JSON.parse(line) as { type?: unknown; jobId?: unknown; ts?: unknown };
      if (record.type === "job-registered" && record.jobId === jobId && typeof record.ts === "string") return Date.parse(record.ts);
    } catch {
      // a torn line: keep looking
    }
  }
  return undefined;
}

async function blobSize(connectionString: string, container: string, name: string): Promise<number | undefined> {
  try {
    const properties = await BlobServiceClient.fromConnectionString(connectionString).getContainerClient(container).getBlobClient(name).getProperties();
    return properties.contentLength;
  } catch {
    return undefined;
  }
}
