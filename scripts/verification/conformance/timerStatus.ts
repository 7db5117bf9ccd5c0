import { buffer } from "node:stream/consumers";
import type { BlobServiceClient } from "@azure/storage-blob";
import type { ProxiedRequest } from "../../support/countingProxy";
import type { InvocationRecord } from "./hostProcess";

/**
 * Where the timer's state lives in host storage, as the Functions host names it for a function `name` of app
 * `hostId`: the listener lock `azure-webjobs-hosts/locks/{hostId}/Host.Functions.{name}.Listener` and the schedule
 * status `azure-webjobs-hosts/timers/{hostId}/Host.Functions.{name}/status`.
 */

export const HOSTS_CONTAINER = "azure-webjobs-hosts";

export function lockTarget(hostId: string, name: string): string {
  return `${HOSTS_CONTAINER}/locks/${hostId}/Host.Functions.${name}.Listener`;
}

export function statusBlobName(hostId: string, name: string): string {
  return `timers/${hostId}/Host.Functions.${name}/status`;
}

/** The NCRONTAB schedule that fires once a day, at the (whole-second) UTC instant `tMs`: the monitor keeps it. */
export function dailyAt(tMs: number): string {
  const t = new Date(tMs);
  return `${t.getUTCSeconds()} ${t.getUTCMinutes()} ${t.getUTCHours()} * * *`;
}

/** A schedule status as instants (ms), from the blob or from a Timer object. */
export interface StatusInstants {
  lastMs: number;
  nextMs: number;
  lastUpdatedMs: number;
}

/** Reads the status blob; null when there is none. */
export async function readStatusBlob(
  blobs: BlobServiceClient,
  hostId: string,
  name: string,
): Promise<StatusInstants | null> {
  const blob = blobs.getContainerClient(HOSTS_CONTAINER).getBlockBlobClient(statusBlobName(hostId, name));
  if (!(await blob.exists())) return null;
  // One GET (downloadToBuffer reads the size first: a rewrite in between would cut the JSON short).
  const body = (await blob.download()).readableStreamBody;
  const json = JSON.parse(body === undefined ? "{}" : (await buffer(body)).toString("utf8")) as Record<string, string>;
  return {
    lastMs: Date.parse(json.Last ?? ""),
    nextMs: Date.parse(json.Next ?? ""),
    lastUpdatedMs: Date.parse(json.LastUpdated ?? ""),
  };
}

/** A Timer object's scheduleStatus as instants; null when it had none. */
export function statusInstants(
  status: { last: string; next: string; lastUpdated: string } | null | undefined,
): StatusInstants | null {
  if (status === null || status === undefined) return null;
  return {
    lastMs: Date.parse(status.last),
    nextMs: Date.parse(status.next),
    lastUpdatedMs: Date.parse(status.lastUpdated),
  };
}

/** What a late run of a missed occurrence T said and left: the Timer object, and the status blob afterwards. */
export interface PastDueFacts {
  isPastDue: boolean | null;
  /** The Timer object's Next: the missed occurrence T. */
  statusNextIsT: boolean | null;
  /** The status blob afterwards: Last the late invocation, Next the day after T. */
  blobAfter: { lastIsInvocation: boolean; nextIsTomorrow: boolean } | null;
}

/** Reads the facts of a late run (`start`, its invocation's start record) of the daily occurrence `tMs`. */
export async function pastDueFacts(
  blobs: BlobServiceClient,
  hostId: string,
  start: InvocationRecord | undefined,
  tMs: number,
): Promise<PastDueFacts> {
  const blob = await readStatusBlob(blobs, hostId, "Tick");
  return {
    isPastDue: start?.isPastDue ?? null,
    statusNextIsT: start === undefined ? null : statusInstants(start.scheduleStatus)?.nextMs === tMs,
    blobAfter:
      blob === null || start === undefined
        ? null
        : {
            lastIsInvocation: isInvocationTime(blob.lastMs, start.atMs),
            nextIsTomorrow: blob.nextMs === tMs + 86_400_000,
          },
  };
}

/** .NET's DateTime.MinValue, what `Last` holds before a first run. */
export const MIN_VALUE_MS = Date.parse("0001-01-01T00:00:00Z");

/**
 * The requests of a host to the status blob, as "METHOD status" in order, with "PUT container" for a create of the
 * container that comes right before a request to the status blob (the lock creates the container too).
 */
export function statusRequests(requests: readonly ProxiedRequest[], hostId: string, name: string): string[] {
  const target = `${HOSTS_CONTAINER}/${statusBlobName(hostId, name)}`;
  const mine = requests.filter((request) => request.target.startsWith(HOSTS_CONTAINER));
  return mine
    .filter(
      (request, index) =>
        request.target === target ||
        (request.target === HOSTS_CONTAINER && request.method === "PUT" && mine[index + 1]?.target === target),
    )
    .map((request) => `${request.method}${request.target === HOSTS_CONTAINER ? " container" : ""} ${request.status}`);
}

/**
 * Whether a status's Last is the invocation that started at `startMs`: the SDK takes the invocation's time just
 * before it binds and runs the function (3.0.6 takes a startup or past-due run's at the listener's start, before the
 * status is read), so Last may precede the function's own start by seconds on a loaded machine, never follow it.
 */
export function isInvocationTime(lastMs: number, startMs: number): boolean {
  return lastMs <= startMs + 500 && lastMs >= startMs - 10_000;
}
