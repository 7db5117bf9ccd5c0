import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { buffer } from "node:stream/consumers";
import { stringProperty, type TriggerBinding } from "./bindings.js";
import type { RpcHttpData } from "./coreApi.js";
import type { HostLogSink, Invoker } from "./invoke.js";
import type { RegisteredFunction } from "./registrations.js";
import { compileRoute, type Route } from "./routes.js";

/**
 * HTTP triggers served on a local port (`node:http`), routed like the host (`/<routePrefix>/<route>`). The request
 * goes to the function as worker HTTP data and the library builds the `HttpRequest` (params, query, headers, body);
 * the handler's `HttpResponseInit`/`HttpResponse` comes back as status, headers and body bytes. A handler that returns
 * nothing answers 204, one that throws answers 500. Not emulated (function keys, streaming, CORS, …): see
 * docs/LOCAL-HOST.md, "Known gaps".
 */

interface HttpFunction {
  fn: RegisteredFunction;
  route: Route;
  /** Upper-case methods; undefined means any. */
  methods: Set<string> | undefined;
}

/** An HTTP route the host serves. */
export interface HttpRoute {
  functionName: string;
  /** Upper-case methods; empty means any. */
  methods: string[];
  /** The path without its leading `/`, e.g. `api/jobs/{id}`. */
  template: string;
}

/** Serves every HTTP-triggered function of the app on one port. */
export class HttpListener {
  private readonly functions: HttpFunction[] = [];
  private readonly running = new Set<Promise<void>>();
  private server: Server | undefined;

  constructor(
    private readonly invoke: Invoker,
    private readonly log: HostLogSink,
    private readonly routePrefix: string,
    private readonly env: Record<string, string | undefined>,
  ) {}

  /** Adds an HTTP-triggered function. */
  add(fn: RegisteredFunction, trigger: TriggerBinding): void {
    const name = fn.metadata.name;
    const route = compileRoute(
      this.routePrefix,
      stringProperty(trigger.binding, "route", this.env, name) ?? name,
      name,
    );
    const methods = Array.isArray(trigger.binding.methods)
      ? new Set(trigger.binding.methods.map((method) => String(method).toUpperCase()))
      : undefined;
    this.functions.push({ fn, route, methods });
    const authLevel = stringProperty(trigger.binding, "authLevel", this.env, name) ?? "function";
    const keyNote =
      authLevel.toLowerCase() === "anonymous" ? "" : ` (authLevel "${authLevel}" is not enforced locally)`;
    this.log({
      level: "information",
      category: "host",
      functionName: name,
      message: `${name}: [${[...(methods ?? ["*"])].join(",")}] /${route.template}${keyNote}`,
    });
  }

  /** Every HTTP route served: its function, methods (upper case; empty: any) and path template (`api/jobs/{id}`). */
  get routes(): HttpRoute[] {
    return this.functions.map((entry) => ({
      functionName: entry.fn.metadata.name,
      methods: [...(entry.methods ?? [])],
      template: entry.route.template,
    }));
  }

  /** True when there is something to serve. */
  get hasFunctions(): boolean {
    return this.functions.length > 0;
  }

  /** Listens on 127.0.0.1:`port` (0 picks a free port) and returns the port. */
  async listen(port: number): Promise<number> {
    const server = createServer((request, response) => {
      const handling = this.handle(request, response).finally(() => this.running.delete(handling));
      this.running.add(handling);
    });
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
    return (server.address() as AddressInfo).port;
  }

  /** Stops accepting requests and waits for those in flight. */
  async close(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await Promise.all(this.running);
    // Keep-alive connections of the requests that just finished are idle now; otherwise close() waits out their
    // timeout.
    server.closeIdleConnections();
    await closed;
  }

  /**
   * Answers one request in this process, as a request on the port is answered (404 without a matching route, 500 when
   * the function failed), with no port open: the development package's `enqueue --app` reaches the app's routes so.
   */
  async answer(request: LocalHttpRequest): Promise<LocalHttpAnswer> {
    const url = new URL(request.url);
    const method = request.method.toUpperCase();
    const target = this.functions.find(
      (candidate) => candidate.route.match(url.pathname) !== undefined && (candidate.methods?.has(method) ?? true),
    );
    if (target === undefined) return { status: 404, headers: {}, body: Buffer.alloc(0) };
    const http: RpcHttpData = {
      method,
      url: url.toString(),
      headers: request.headers,
      query: Object.fromEntries(url.searchParams),
      params: target.route.match(url.pathname) ?? {},
      body: { bytes: request.body },
    };
    const outcome = await this.invoke(target.fn, {
      data: { http },
      reason: `This function was programmatically called via the host APIs.`,
    });
    const answer = outcome.ok ? outcome.response.returnValue?.http : undefined;
    if (!outcome.ok) return { status: 500, headers: {}, body: Buffer.alloc(0) };
    if (answer === undefined) return { status: 204, headers: {}, body: Buffer.alloc(0) };
    return answerOf(answer);
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    try {
      const answer = await this.answer({
        method: request.method ?? "GET",
        url: new URL(request.url ?? "/", `http://${request.headers.host ?? "127.0.0.1"}`).toString(),
        headers: flattenHeaders(request),
        body: await buffer(request),
      });
      response.writeHead(answer.status, answer.headers).end(answer.body);
    } catch (error) {
      this.log({ level: "error", category: "host", message: `HTTP request failed: ${(error as Error).message}` });
      if (!response.headersSent) response.writeHead(500);
      response.end();
    }
  }
}

/** A request answered in process ({@link HttpListener.answer}). */
export interface LocalHttpRequest {
  method: string;
  /** The whole URL (`http://127.0.0.1/api/jobs`): only its path and query are read. */
  url: string;
  headers: Record<string, string>;
  body: Uint8Array;
}

/** The function's answer: status, headers (a cookie list under `set-cookie`) and body bytes. */
export interface LocalHttpAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
}

function answerOf(answer: RpcHttpData): LocalHttpAnswer {
  const headers: Record<string, string | string[]> = { ...answer.headers };
  const cookies = (answer.cookies ?? []).map((cookie) => `${cookie.name ?? ""}=${cookie.value ?? ""}`);
  if (cookies.length > 0) headers["set-cookie"] = cookies;
  const body = answer.body;
  return {
    status: Number(answer.statusCode ?? 200),
    headers,
    body: body?.bytes !== undefined ? Buffer.from(body.bytes) : Buffer.from(body?.string ?? ""),
  };
}

function flattenHeaders(request: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return headers;
}
