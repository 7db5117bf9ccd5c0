import { appendFileSync, existsSync, readFileSync } from "node:fs";
import {
  BaseRequestPolicy,
  type HttpOperationResponse,
  type RequestPolicy,
  type RequestPolicyFactory,
  type RequestPolicyOptions,
  type WebResource,
} from "@azure/storage-blob";
import { addProcessRequestPolicy } from "../../../../src/azure/clients";

/**
 * Counts a process's storage requests with a request policy in the SDK's own pipeline (`newPipeline(…).factories`):
 * every blob and queue request a client built with it sends — the app's, the local host's trigger polling, the
 * baseline's — is recorded with the facts that say what operation it was, in time buckets, so a caller can count any
 * window (e.g. from a job's submission to its completion). A process writes its counts to a file (JSON lines, a
 * delta every {@link FLUSH_MS} and at exit) that the benchmark reads; the benchmark's own clients count in memory.
 *
 * The policy sits where the SDK puts custom policies: before its retry policy, so an operation retried after a
 * timeout or a 5xx counts once (on Azurite, retries are rare; the old proxy counted each attempt).
 */

/** Requests with the same facts in one time bucket. */
export interface RequestCount {
  /** Start of the time bucket (wall clock, ms). */
  atMs: number;
  /** Which process kind sent it: "app" (an instance), "submitter", "baseline", … */
  source: string;
  service: "blob" | "queue";
  method: string;
  /** The container or queue ("" for the account). */
  name: string;
  /** Blob name with ids replaced (`{id}` for UUIDs, `{n}` for digit runs); for queues "messages", "message" or "". */
  path: string;
  /** The `comp` query parameter ("" when absent). */
  comp: string;
  /** `x-ms-lease-action` on `comp=lease` requests ("" otherwise). */
  leaseAction: string;
  /** HTTP status; 0 when no answer came (network error, timeout). */
  status: number;
  /** A receive (GET …/messages) that returned no message: an idle poll. */
  empty: boolean;
  requests: number;
  /** Messages returned by receives. */
  messages: number;
}

/** Bucket width of {@link RequestCount.atMs}. */
export const BUCKET_MS = 200;
/** How often a process appends its new counts to its file. */
export const FLUSH_MS = 500;

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const MESSAGE_TAG = "<QueueMessage>";

/** Counts requests of one process. */
export class RequestCounter {
  private counts = new Map<string, RequestCount>();
  /** The policy to add to clients' pipelines. */
  readonly policy: RequestPolicyFactory;

  /** `queueEndpoint`: URL prefix of the queue service (requests under it are queue requests, all others blob). */
  constructor(
    readonly source: string,
    private readonly queueEndpoint: string,
  ) {
    this.policy = {
      create: (next: RequestPolicy, options: RequestPolicyOptions) => new CountingPolicy(next, options, this),
    };
  }

  /** Records one request and its answer. */
  record(request: WebResource, status: number, body: string | undefined, atMs: number): void {
    const facts = describeRequest(
      request.url.startsWith(this.queueEndpoint) ? "queue" : "blob",
      request.method,
      request.url,
      request.headers.get("x-ms-lease-action"),
    );
    const isReceive = facts.service === "queue" && facts.method === "GET" && facts.path === "messages";
    const messages = isReceive && body !== undefined ? body.split(MESSAGE_TAG).length - 1 : 0;
    const count: RequestCount = {
      ...facts,
      atMs: atMs - (atMs % BUCKET_MS),
      source: this.source,
      status,
      empty: isReceive && messages === 0,
      requests: 1,
      messages,
    };
    const key = [
      count.atMs,
      count.service,
      count.method,
      count.name,
      count.path,
      count.comp,
      count.leaseAction,
      count.status,
      count.empty,
    ].join("|");
    const current = this.counts.get(key);
    if (current === undefined) this.counts.set(key, count);
    else {
      current.requests += 1;
      current.messages += messages;
    }
  }

  /** The counts since the last call, and a fresh count from now on. */
  take(): RequestCount[] {
    const counts = [...this.counts.values()];
    this.counts = new Map();
    return counts;
  }
}

class CountingPolicy extends BaseRequestPolicy {
  constructor(
    next: RequestPolicy,
    options: RequestPolicyOptions,
    private readonly counter: RequestCounter,
  ) {
    super(next, options);
  }

  override async sendRequest(request: WebResource): Promise<HttpOperationResponse> {
    const atMs = Date.now();
    try {
      const response = await this._nextPolicy.sendRequest(request);
      this.counter.record(request, response.status, response.bodyAsText ?? undefined, atMs);
      return response;
    } catch (error) {
      // An error status (4xx, 5xx) arrives as a RestError carrying it.
      const status = (error as { statusCode?: unknown }).statusCode;
      this.counter.record(request, typeof status === "number" ? status : 0, undefined, atMs);
      throw error;
    }
  }
}

/** The facts of a request that say what operation it is. */
export function describeRequest(
  service: RequestCount["service"],
  method: string,
  url: string,
  leaseHeader: string | undefined,
): Pick<RequestCount, "service" | "method" | "name" | "path" | "comp" | "leaseAction"> {
  const parsed = new URL(url);
  // Path style (Azurite): /<account>/<container or queue>/<blob or "messages"[/<id>]>; host style (Azure): no account.
  const all = parsed.pathname
    .split("/")
    .slice(1)
    .map((segment) => safeDecode(segment));
  const segments = parsed.hostname === "127.0.0.1" || parsed.hostname === "localhost" ? all.slice(1) : all;
  const name = segments[0] ?? "";
  const rest = segments.slice(1);
  let path: string;
  if (service === "queue") path = rest[0] === "messages" ? (rest.length > 1 ? "message" : "messages") : rest.join("/");
  else path = rest.join("/").replace(UUID, "{id}").replace(/\d+/g, "{n}");
  const comp = parsed.searchParams.get("comp") ?? "";
  return {
    service,
    method: method.toUpperCase(),
    name,
    path,
    comp,
    leaseAction: comp === "lease" && leaseHeader !== undefined ? leaseHeader : "",
  };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The queue endpoint of a connection string (`QueueEndpoint=`), or "" when it names none. */
export function queueEndpointOf(connectionString: string): string {
  const match = /(?:^|;)\s*QueueEndpoint=([^;]+)/i.exec(connectionString);
  return match?.[1]?.trim() ?? "";
}

/**
 * Counts every storage request this process's clients send from now on (clients built by `createStorageClients`),
 * appending the counts to `file`: a delta every {@link FLUSH_MS} and a last one at exit. For the instance processes
 * (`LOCAL_REQUEST_COUNTS_FILE`) and the baseline's workers.
 */
export function countProcessRequests(file: string, source: string, connectionString: string): RequestCounter {
  const counter = new RequestCounter(source, queueEndpointOf(connectionString));
  addProcessRequestPolicy(counter.policy);
  const flush = (): void => {
    const counts = counter.take();
    if (counts.length > 0) appendFileSync(file, `${counts.map((count) => JSON.stringify(count)).join("\n")}\n`);
  };
  setInterval(flush, FLUSH_MS).unref();
  process.once("exit", flush);
  return counter;
}

/** Reads the counts files of {@link countProcessRequests} (a missing file has none; a torn last line is skipped). */
export function readCountFiles(files: readonly string[]): RequestCount[] {
  const counts: RequestCount[] = [];
  for (const file of files) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (line.trim() === "") continue;
      try {
        counts.push(JSON.parse(line) as RequestCount);
      } catch {
        // a line still being written
      }
    }
  }
  return counts;
}
