import type { RequestCount } from "./requestCounter";

/**
 * Gives the raw request counts (./requestCounter.ts) their meaning: which queue or container, which operation, idle
 * poll or not; then sums them over a time window and per item.
 */

/** Which queue and container names play which part (the app's and the baseline's names differ). */
export interface StorageRoles {
  workQueues: readonly string[];
  resultsQueues: readonly string[];
  leaseContainers: readonly string[];
  stateContainers: readonly string[];
  inputContainers: readonly string[];
  /** The app's own blobs: specs, chunks, inbox markers, large partials. */
  systemContainers: readonly string[];
}

/** The operation groups the report shows. */
export const OP_GROUPS = [
  "workSend",
  "workReceive",
  "workDelete",
  "resultsSend",
  "resultsReceive",
  "resultsDelete",
  "blobRead",
  "blobWrite",
  "lease",
  "polling",
  "other",
] as const;
export type OpGroup = (typeof OP_GROUPS)[number];

/** One detailed operation's totals. */
export interface OpDetail {
  requests: number;
  /** Answers with status ≥ 400 (e.g. a lease acquire that lost the race: 409). */
  failed: number;
  /** Messages returned (receives only). */
  messages: number;
}

/** Operations in a window. */
export interface OpsSummary {
  total: number;
  perItem: number;
  groups: Record<OpGroup, number>;
  groupsPerItem: Record<OpGroup, number>;
  /** By detailed operation, e.g. `work.receive`, `results.poll`, `state.write`, `lease.renew`. */
  detail: Record<string, OpDetail>;
  /** Mean messages per non-empty receive. */
  receiveBatch: { work: number | undefined; results: number | undefined };
}

/** The detailed operation name of a request, e.g. `work.send`, `results.poll`, `lease.acquire`, `system.chunk.read`. */
export function operationOf(count: RequestCount, roles: StorageRoles): string {
  if (count.service === "queue") {
    const role = roles.workQueues.includes(count.name)
      ? "work"
      : roles.resultsQueues.includes(count.name)
        ? "results"
        : count.name.endsWith("-poison")
          ? "poison"
          : "queue";
    if (count.path === "messages" && count.method === "POST") return `${role}.send`;
    if (count.path === "messages" && count.method === "GET") return count.empty ? `${role}.poll` : `${role}.receive`;
    if (count.path === "message" && count.method === "DELETE") return `${role}.delete`;
    if (count.path === "message" && count.method === "PUT") return `${role}.update`;
    return `${role}.admin`;
  }
  const verb =
    count.method === "GET"
      ? "read"
      : count.method === "HEAD"
        ? "props"
        : count.method === "DELETE"
          ? "delete"
          : "write";
  if (count.path === "" || count.comp === "list")
    return count.comp === "list" ? `${containerRole(count.name, roles)}.list` : "blob.admin";
  if (roles.leaseContainers.includes(count.name)) {
    if (count.comp === "lease") return `lease.${count.leaseAction || "unknown"}`;
    return count.comp === "metadata" ? "lease.metadata" : `lease.${verb}`;
  }
  if (roles.stateContainers.includes(count.name)) return `state.${verb}`;
  if (roles.systemContainers.includes(count.name)) {
    const kind = /^jobs\/\{id\}\/items\//.test(count.path)
      ? "chunk"
      : /\/spec\.json$/.test(count.path)
        ? "spec"
        : count.path.startsWith("inbox/")
          ? "inbox"
          : count.path.includes("/partials/")
            ? "partial"
            : "other";
    return `system.${kind}.${verb}`;
  }
  if (roles.inputContainers.includes(count.name)) return `inputs.item.${verb}`;
  return `blob.${verb}`;
}

function containerRole(name: string, roles: StorageRoles): string {
  if (roles.leaseContainers.includes(name)) return "lease";
  if (roles.stateContainers.includes(name)) return "state";
  if (roles.inputContainers.includes(name)) return "inputs";
  if (roles.systemContainers.includes(name)) return "system";
  return "blob";
}

/** The report group of a detailed operation. */
export function groupOf(operation: string): OpGroup {
  const [area = "", op = ""] = operation.split(".");
  const verb = operation.slice(operation.lastIndexOf(".") + 1);
  if (op === "poll") return "polling";
  if (area === "work" || area === "results") {
    const name = `${area}${op.charAt(0).toUpperCase()}${op.slice(1)}`;
    if ((OP_GROUPS as readonly string[]).includes(name)) return name as OpGroup;
    return "other";
  }
  if (area === "lease") return "lease";
  if (area === "state" || area === "inputs" || area === "system" || area === "blob") {
    if (verb === "read" || verb === "props" || verb === "list") return "blobRead";
    if (verb === "write" || verb === "delete") return "blobWrite";
  }
  return "other";
}

/** Sums requests by operation and group, per item. */
export function summarizeOps(
  counts: readonly RequestCount[],
  options: { items: number; roles: StorageRoles },
): OpsSummary {
  const detail: Record<string, OpDetail> = {};
  const groups = Object.fromEntries(OP_GROUPS.map((group) => [group, 0])) as Record<OpGroup, number>;
  let total = 0;
  for (const count of counts) {
    const operation = operationOf(count, options.roles);
    const entry = (detail[operation] ??= { requests: 0, failed: 0, messages: 0 });
    entry.requests += count.requests;
    entry.messages += count.messages;
    if (count.status >= 400) entry.failed += count.requests;
    groups[groupOf(operation)] += count.requests;
    total += count.requests;
  }
  const perItem = (value: number): number => round(value / Math.max(1, options.items), 3);
  const batch = (operation: string): number | undefined => {
    const entry = detail[operation];
    return entry === undefined || entry.requests === 0 ? undefined : round(entry.messages / entry.requests, 1);
  };
  const sorted = Object.fromEntries(Object.entries(detail).sort(([a], [b]) => a.localeCompare(b)));
  return {
    total,
    perItem: perItem(total),
    groups,
    groupsPerItem: Object.fromEntries(OP_GROUPS.map((group) => [group, perItem(groups[group])])) as Record<
      OpGroup,
      number
    >,
    detail: sorted,
    receiveBatch: { work: batch("work.receive"), results: batch("results.receive") },
  };
}

/** Rounds to `digits` decimals. */
export function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
