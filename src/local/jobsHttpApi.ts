import type { FieldError, JobStatus } from "../coordination/state/jobStatus.js";
import type { Abortable } from "../library/util/delay.js";
import type { HttpRoute } from "./httpTrigger.js";

/**
 * The coordinator's job routes over HTTP, as any client of a deployed app uses them — submit (`POST …/jobs`), status
 * (`GET …/jobs/{id}`), cancel (`DELETE …/jobs/{id}`) — for `azure-leader-coordinator enqueue --url`, and on the local
 * instances for `local` and the testing entry, which so submit jobs of whatever kinds the user's app registered and
 * read statuses through the app's own views.
 */

/** What a submission came to: the job, or why the app refused it. */
export type HttpSubmitResult =
  | { ok: true; id: string; itemCount: number; replayed?: true }
  | { ok: false; httpStatus: number; error: string; errors: FieldError[] };

/** What a cancellation came to (the app's answer, by its status code). */
export type HttpCancelResult =
  | { outcome: "requested" }
  | { outcome: "not-found" }
  | { outcome: "ended"; status: string }
  | { outcome: "refused"; httpStatus: number; error: string };

/** Where the routes are: a base URL (`https://my-app.azurewebsites.net/api`) each path goes under. */
export type BaseUrl = () => string | undefined;

/** The job routes of one app. */
export class JobsHttpApi {
  /**
   * @param baseUrl the URL the routes `jobs` and `jobs/{id}` are under (read at each call: local instances die);
   *   undefined when no instance answers.
   * @param key a function (or admin, for cancel) key, sent as `x-functions-key`.
   */
  constructor(
    private readonly baseUrl: BaseUrl,
    private readonly key?: string,
  ) {}

  /**
   * Submits a job; field errors and refusals are a value. With `idempotencyKey`, sent as the `Idempotency-Key` header:
   * a replay of a submission made before under the key answers 200 with the first job's id (`replayed`).
   */
  async submit(body: unknown, options: Abortable & { idempotencyKey?: string } = {}): Promise<HttpSubmitResult> {
    const headers: Record<string, string> =
      options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey };
    const response = await this.request("POST", "jobs", options, JSON.stringify(body), headers);
    const json = await jsonOf(response);
    if ((response.status === 202 || response.status === 200) && typeof json.id === "string")
      return {
        ok: true,
        id: json.id,
        itemCount: typeof json.itemCount === "number" ? json.itemCount : 0,
        ...(response.status === 200 && json.replayed === true ? { replayed: true as const } : {}),
      };
    return {
      ok: false,
      httpStatus: response.status,
      error: textOf(json.error, `HTTP ${response.status}`),
      errors: Array.isArray(json.errors) ? (json.errors as FieldError[]) : [],
    };
  }

  /** The job's status through the app's views; undefined for no such job. @throws Error on any other answer. */
  async getJob(id: string, options: Abortable = {}): Promise<JobStatus | undefined> {
    const response = await this.request("GET", `jobs/${encodeURIComponent(id)}`, options);
    if (response.status === 404) return undefined;
    const json = await jsonOf(response);
    if (response.status !== 200)
      throw new Error(`GET jobs/${id} answered ${response.status}: ${textOf(json.error, "no reason given")}`);
    return json as unknown as JobStatus;
  }

  /** Asks for the job's cancellation (cancel takes the admin key in Azure). */
  async cancel(id: string, options: Abortable = {}): Promise<HttpCancelResult> {
    const response = await this.request("DELETE", `jobs/${encodeURIComponent(id)}`, options);
    const json = await jsonOf(response);
    if (response.status === 202) return { outcome: "requested" };
    if (response.status === 404) return { outcome: "not-found" };
    if (response.status === 409) return { outcome: "ended", status: textOf(json.status, "ended") };
    return { outcome: "refused", httpStatus: response.status, error: textOf(json.error, `HTTP ${response.status}`) };
  }

  private async request(
    method: string,
    path: string,
    options: Abortable,
    body?: string,
    extraHeaders: Record<string, string> = {},
  ): Promise<Response> {
    const base = this.baseUrl();
    if (base === undefined) throw new Error("No instance serves the coordinator's HTTP routes right now.");
    const headers: Record<string, string> = { accept: "application/json", ...extraHeaders };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.key !== undefined) headers["x-functions-key"] = this.key;
    return fetch(`${base.replace(/\/+$/, "")}/${path}`, {
      method,
      headers,
      ...(body === undefined ? {} : { body }),
      ...(options.abortSignal === undefined ? {} : { signal: options.abortSignal }),
    });
  }
}

/** A string field of an answer, or `fallback`. */
function textOf(value: unknown, fallback: string): string {
  return typeof value === "string" ? value : fallback;
}

/** A response body as a JSON object; {} when it is empty or not an object. */
async function jsonOf(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text();
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * The base URL of the job routes among an instance's routes (`POST <prefix>/jobs`, `GET <prefix>/jobs/{id}`), on
 * `http://127.0.0.1:<port>`; undefined when it serves none (the app registered `http: false`).
 */
export function jobsBaseUrl(port: number, routes: readonly HttpRoute[]): string | undefined {
  const submit = routeEndingIn(routes, "jobs", "POST");
  return submit === undefined ? undefined : `http://127.0.0.1:${port}/${submit.template.slice(0, -"jobs".length)}`;
}

/** The status page's URL among an instance's routes (`GET <prefix>/status`); undefined when it serves none. */
export function statusPageUrl(port: number, routes: readonly HttpRoute[]): string | undefined {
  const page = routeEndingIn(routes, "status", "GET");
  return page === undefined ? undefined : `http://127.0.0.1:${port}/${page.template}`;
}

function routeEndingIn(routes: readonly HttpRoute[], last: string, method: string): HttpRoute | undefined {
  return routes.find(
    (route) =>
      (route.template === last || route.template.endsWith(`/${last}`)) &&
      (route.methods.length === 0 || route.methods.includes(method)),
  );
}
