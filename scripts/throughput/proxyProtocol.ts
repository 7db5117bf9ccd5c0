/**
 * What the counting proxy process (./proxyProcess.ts) and the benchmark say to each other over the IPC channel of
 * `fork`, and the shape of its counts. The proxy records raw request facts; ./opsBreakdown.ts gives them meaning.
 */

/** Who opened the connection a request came on: the benchmark process itself (the runner), or anyone else. */
export type RequestSource = "runner" | "other" | "unknown";

/** Requests with the same facts in one time bucket. */
export interface RequestCount {
  /** Start of the time bucket (wall clock, ms). */
  atMs: number;
  source: RequestSource;
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
  status: number;
  /** A receive (GET …/messages) that returned no message: an idle poll. */
  empty: boolean;
  requests: number;
  /** Messages returned by receives. */
  messages: number;
}

/** Bucket width of {@link RequestCount.atMs}. */
export const BUCKET_MS = 200;

/** Parent → proxy. */
export type ProxyCommand = { type: "take" } | { type: "stop" };

/** Proxy → parent. */
export type ProxyReport = { type: "ready"; blobPort: number; queuePort: number } | { type: "counts"; counts: RequestCount[] } | { type: "error"; message: string };

/** Narrows an IPC message to a {@link ProxyReport}. */
export function isProxyReport(value: unknown): value is ProxyReport {
  if (typeof value !== "object" || value === null) return false;
  const type = (value as { type?: unknown }).type;
  return type === "ready" || type === "counts" || type === "error";
}

/** Narrows an IPC message to a {@link ProxyCommand}. */
export function isProxyCommand(value: unknown): value is ProxyCommand {
  if (typeof value !== "object" || value === null) return false;
  const type = (value as { type?: unknown }).type;
  return type === "take" || type === "stop";
}
