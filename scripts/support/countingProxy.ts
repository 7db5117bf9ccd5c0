import { createServer, request, Agent, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { azuriteConnectionString } from "../../dev/src/local/azurite";

/**
 * A counting HTTP proxy in front of Azurite's blob, queue and table services: the one way `bench:peer` counts the
 * storage requests of both sides (the app's instances and the Durable Task Framework's workers), and
 * `conformance:host` those of the real WebJobs SDK and of the local host, whatever SDK sent them. Each request is
 * recorded when its answer has been passed on: its service, method, operation, status, and for a table batch
 * (`$batch`, an entity group transaction) the entity operations it carries — Azure bills a table batch as one
 * transaction per entity, so those are priced, not the HTTP request. The details a conformance row compares come too:
 * a queue request's visibility timeout and time-to-live, a blob request's lease action and duration, and the id and
 * dequeue count of each message a receive returned.
 */

export type Service = "blob" | "queue" | "table";

/** One proxied request. */
export interface ProxiedRequest {
  atMs: number;
  service: Service;
  method: string;
  /** The container, queue or table (a table's entity keys left out). */
  name: string;
  /** The blob path with ids and numbers replaced, "messages"/"message" for queues, "" otherwise. */
  path: string;
  comp: string;
  status: number;
  /** Entity operations of a table batch; 1 for every other request. */
  transactions: number;
  /** The path after the account, as sent (the blob's full name, ids and numbers kept). */
  target: string;
  /** A queue request's `visibilitytimeout`, s. */
  visibilityTimeoutS?: number;
  /** A queue send's `messagettl`, s (-1: never expires; absent: the service's default, 7 days). */
  messageTtlS?: number;
  /** A blob lease request's `x-ms-lease-action`: acquire, renew, release, break, change. */
  leaseAction?: string;
  /** A lease acquire's `x-ms-lease-duration`, s (-1: infinite). */
  leaseDurationS?: number;
  /** The messages a receive (Get Messages, not a peek) returned: id and dequeue count. */
  received?: { id: string; dequeueCount: number }[];
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const BATCH_PART = /^content-type:\s*application\/http/gim;

/** A running proxy of the three services. */
export interface CountingProxy {
  /** A connection string whose blob and queue endpoints go through the proxy (the app uses no tables). */
  readonly appConnectionString: string;
  /** A connection string whose blob, queue and table endpoints go through the proxy. */
  readonly connectionString: string;
  /** The requests recorded with `atMs` in [fromMs, toMs). */
  between(fromMs: number, toMs: number): ProxiedRequest[];
  /** Forgets requests older than `beforeMs`. */
  forget(beforeMs: number): void;
  close(): Promise<void>;
}

/** Starts a proxy in front of Azurite's ports (`account` is the path-style account segment). */
export async function startCountingProxy(
  azurite: { blobPort: number; queuePort: number; tablePort: number },
  account = "devstoreaccount1",
): Promise<CountingProxy> {
  let records: ProxiedRequest[] = [];
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const servers: Server[] = [];
  const listen = async (service: Service, targetPort: number): Promise<number> => {
    const server = createServer((incoming, outgoing) => {
      const atMs = Date.now();
      const isBatch = service === "table" && (incoming.url ?? "").includes("$batch");
      const isReceive =
        service === "queue" &&
        incoming.method === "GET" &&
        /\/messages(\?|$)/.test(incoming.url ?? "") &&
        !/peekonly=true/i.test(incoming.url ?? "");
      let batchBody = "";
      if (isBatch) incoming.on("data", (chunk: Buffer) => (batchBody += chunk.toString("latin1")));
      const upstream = request(
        {
          host: "127.0.0.1",
          port: targetPort,
          method: incoming.method,
          path: incoming.url,
          headers: incoming.headers,
          agent,
        },
        (answer: IncomingMessage) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          let answerBody = "";
          if (isReceive) answer.on("data", (chunk: Buffer) => (answerBody += chunk.toString("utf8")));
          answer.pipe(outgoing);
          answer.on("end", () => {
            const record = describe(
              service,
              incoming,
              answer.statusCode ?? 0,
              atMs,
              isBatch ? batchParts(batchBody) : 1,
              account,
            );
            if (isReceive) record.received = receivedMessages(answerBody);
            records.push(record);
          });
        },
      );
      upstream.on("error", () => {
        records.push(describe(service, incoming, 0, atMs, 1, account));
        outgoing.destroy();
      });
      incoming.pipe(upstream);
    });
    server.keepAliveTimeout = 30_000;
    servers.push(server);
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    return (server.address() as AddressInfo).port;
  };
  const blob = await listen("blob", azurite.blobPort);
  const queue = await listen("queue", azurite.queuePort);
  const table = await listen("table", azurite.tablePort);
  const app = azuriteConnectionString(blob, queue);
  return {
    appConnectionString: app,
    connectionString: `${app}TableEndpoint=http://127.0.0.1:${table}/${account};`,
    between: (fromMs, toMs) => records.filter((record) => record.atMs >= fromMs && record.atMs < toMs),
    forget: (beforeMs) => {
      records = records.filter((record) => record.atMs >= beforeMs);
    },
    close: async () => {
      agent.destroy();
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((done) => {
              server.closeAllConnections();
              server.close(() => done());
            }),
        ),
      );
    },
  };
}

/** The id and dequeue count of each message in a Get Messages answer (`<QueueMessage>` elements). */
export function receivedMessages(xml: string): { id: string; dequeueCount: number }[] {
  return [...xml.matchAll(/<QueueMessage>([\s\S]*?)<\/QueueMessage>/g)].map((match) => ({
    id: /<MessageId>([^<]*)<\/MessageId>/.exec(match[1] ?? "")?.[1] ?? "",
    dequeueCount: Number(/<DequeueCount>(\d+)<\/DequeueCount>/.exec(match[1] ?? "")?.[1] ?? Number.NaN),
  }));
}

/** A number from a query parameter or header, when present. */
function numberOf(value: string | string[] | null | undefined): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === null || text === undefined || text === "") return undefined;
  const number = Number(text);
  return Number.isFinite(number) ? number : undefined;
}

/** The entity operations of a table batch body (each is one `application/http` part); at least 1. */
export function batchParts(body: string): number {
  return Math.max(1, body.match(BATCH_PART)?.length ?? 0);
}

function describe(
  service: Service,
  incoming: IncomingMessage,
  status: number,
  atMs: number,
  transactions: number,
  account: string,
): ProxiedRequest {
  const url = new URL(incoming.url ?? "/", "http://127.0.0.1");
  const segments = url.pathname
    .split("/")
    .slice(1)
    .map((segment) => decodeURIComponent(segment));
  const rest = segments[0] === account ? segments.slice(1) : segments;
  const first = rest[0] ?? "";
  const name = service === "table" ? first.replace(/\(.*$/, "") : first;
  const tail = rest.slice(1);
  const path =
    service === "queue"
      ? tail[0] === "messages"
        ? tail.length > 1
          ? "message"
          : "messages"
        : tail.join("/")
      : service === "blob"
        ? tail.join("/").replace(UUID, "{id}").replace(/\d+/g, "{n}")
        : "";
  const leaseAction = incoming.headers["x-ms-lease-action"];
  return {
    atMs,
    service,
    method: (incoming.method ?? "GET").toUpperCase(),
    name,
    path,
    comp: url.searchParams.get("comp") ?? "",
    status,
    transactions,
    target: rest.join("/"),
    visibilityTimeoutS: numberOf(url.searchParams.get("visibilitytimeout")),
    messageTtlS: numberOf(url.searchParams.get("messagettl")),
    leaseAction: typeof leaseAction === "string" ? leaseAction : undefined,
    leaseDurationS: numberOf(incoming.headers["x-ms-lease-duration"]),
  };
}
