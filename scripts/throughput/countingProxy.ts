import { Agent, createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { BUCKET_MS, type RequestCount, type RequestSource } from "./proxyProtocol";
import { SocketOwnerResolver } from "./socketOwner";

/**
 * An HTTP proxy in front of Azurite that counts every storage request: one listening port per service (blob, queue),
 * each forwarding to Azurite's port for that service. A connection string built with the proxy's ports makes every
 * client — the instances' app code, their host emulator's queue polling, the benchmark's baseline — go through it.
 * Counts are kept per time bucket, so a caller can count the requests of any window (e.g. from job submission to
 * completion), and per source (the benchmark process itself, or anyone else).
 */

/** Options of a {@link CountingProxy}. */
export interface CountingProxyOptions {
  /** Azurite's blob port. */
  blobTargetPort: number;
  /** Azurite's queue port. */
  queueTargetPort: number;
  /** Requests on connections this process opened are counted with source "runner". */
  runnerPid?: number;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const MESSAGE_TAG = "<QueueMessage>";

/** A counting, forwarding proxy for Azurite's blob and queue services. */
export class CountingProxy {
  private readonly counts = new Map<string, RequestCount>();
  private readonly sources = new WeakMap<Socket, Promise<RequestSource>>();
  private readonly pending = new Set<Promise<void>>();
  private readonly servers: Server[] = [];
  /** Upstream connections are reused; many clients share them. */
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 256 });
  private readonly owners: SocketOwnerResolver | undefined;

  constructor(private readonly options: CountingProxyOptions) {
    this.owners = options.runnerPid === undefined ? undefined : new SocketOwnerResolver(options.runnerPid);
  }

  /** Listens on two free loopback ports; returns them. */
  async start(): Promise<{ blobPort: number; queuePort: number }> {
    const blobPort = await this.listen("blob", this.options.blobTargetPort);
    const queuePort = await this.listen("queue", this.options.queueTargetPort);
    return { blobPort, queuePort };
  }

  /** Returns the counts so far (waiting for requests whose source is still being looked up) and starts afresh. */
  async take(): Promise<RequestCount[]> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
    const counts = [...this.counts.values()];
    this.counts.clear();
    return counts;
  }

  /** Stops listening and closes every connection. */
  async stop(): Promise<void> {
    await Promise.all(
      this.servers.map(
        (server) =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      ),
    );
    this.agent.destroy();
  }

  private async listen(service: RequestCount["service"], targetPort: number): Promise<number> {
    const server = createServer((request, response) => {
      this.forward(service, targetPort, request, response);
    });
    server.keepAliveTimeout = 30_000;
    const port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
    });
    server.on("connection", (socket: Socket) => {
      this.sources.set(socket, this.sourceOf(socket, port));
    });
    this.servers.push(server);
    return port;
  }

  private async sourceOf(socket: Socket, serverPort: number): Promise<RequestSource> {
    const clientPort = socket.remotePort;
    if (this.owners === undefined || clientPort === undefined) return "unknown";
    const owned = await this.owners.isOwnedBy(clientPort, serverPort);
    return owned === undefined ? "unknown" : owned ? "runner" : "other";
  }

  private forward(service: RequestCount["service"], targetPort: number, request: IncomingMessage, response: ServerResponse): void {
    const atMs = Date.now();
    const facts = describeRequest(service, request);
    const isReceive = service === "queue" && facts.method === "GET" && facts.path === "messages";
    const source = this.sources.get(request.socket) ?? Promise.resolve<RequestSource>("unknown");
    const finish = (status: number, messages: number): void => {
      const recorded = source.then((resolved) => {
        this.add({ ...facts, atMs: atMs - (atMs % BUCKET_MS), source: resolved, status, empty: isReceive && messages === 0, requests: 1, messages });
      });
      this.pending.add(recorded);
      void recorded.finally(() => this.pending.delete(recorded));
    };
    // Bodies here are small (queue messages ≤ 64 KiB, state and input blobs), so buffer them: a request can then be
    // sent again when a pooled connection turns out to have been closed by Azurite meanwhile.
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.once("end", () => {
      const body = Buffer.concat(chunks);
      const send = (attempt: number): void => {
        const upstream = httpRequest(
          { host: "127.0.0.1", port: targetPort, method: request.method, path: request.url, headers: { ...request.headers, host: `127.0.0.1:${targetPort}` }, agent: this.agent },
          (reply) => {
            const status = reply.statusCode ?? 502;
            response.writeHead(status, reply.headers);
            let text = "";
            if (isReceive) reply.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
            reply.once("end", () => finish(status, isReceive ? text.split(MESSAGE_TAG).length - 1 : 0));
            reply.pipe(response);
          },
        );
        upstream.once("error", (error: NodeJS.ErrnoException) => {
          // A pooled connection Azurite closed while idle (its keep-alive is 5 s): no answer from storage, so try
          // again once on a fresh one.
          if (upstream.reusedSocket && attempt === 1 && !response.headersSent) {
            send(2);
            return;
          }
          process.stderr.write(`counting proxy: ${request.method ?? "?"} ${request.url ?? "?"} (attempt ${attempt}${upstream.reusedSocket ? ", pooled connection" : ""}): ${error.code ?? ""} ${error.message}; answered 502\n`);
          finish(502, 0);
          if (!response.headersSent) response.writeHead(502, { "content-type": "text/plain" });
          response.end(`Counting proxy: Azurite did not answer: ${error.message}`);
        });
        upstream.end(body);
      };
      send(1);
    });
  }

  private add(count: RequestCount): void {
    const key = [count.atMs, count.source, count.service, count.method, count.name, count.path, count.comp, count.leaseAction, count.status, count.empty].join("|");
    const current = this.counts.get(key);
    if (current === undefined) this.counts.set(key, count);
    else {
      current.requests += count.requests;
      current.messages += count.messages;
    }
  }
}

/** The facts of a request that say what operation it is. */
function describeRequest(service: RequestCount["service"], request: IncomingMessage): Pick<RequestCount, "service" | "method" | "name" | "path" | "comp" | "leaseAction"> {
  const url = new URL(request.url ?? "/", "http://proxy");
  // Path style: /<account>/<container or queue>/<blob or "messages"[/<id>]>
  const segments = url.pathname.split("/").slice(2).map((segment) => safeDecode(segment));
  const name = segments[0] ?? "";
  const rest = segments.slice(1);
  let path: string;
  if (service === "queue") path = rest[0] === "messages" ? (rest.length > 1 ? "message" : "messages") : rest.join("/");
  else path = rest.join("/").replace(UUID, "{id}").replace(/\d+/g, "{n}");
  const comp = url.searchParams.get("comp") ?? "";
  const leaseHeader = request.headers["x-ms-lease-action"];
  return { service, method: request.method ?? "GET", name, path, comp, leaseAction: comp === "lease" && typeof leaseHeader === "string" ? leaseHeader : "" };
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
