import type { FieldError, JobStatus } from "../coordination/state/jobStatus.js";
import type { Abortable } from "../library/util/delay.js";

/**
 * The coordinator's job routes over HTTP, as any client of a deployed app uses them — submit (`POST …/jobs`), status
 * (`GET …/jobs/{id}`), cancel (`DELETE …/jobs/{id}`) — for `azure-leader-coordinator enqueue --url`, and, in the
 * development package, on the local instances for `local` and the testing entry (which so submit jobs of whatever kinds
 * the user's app registered and read statuses through the app's own views) and in process for `enqueue --app`.
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

/** What `enqueue` and the local tools need of an app's job routes. */
export interface JobsApi {
  /** Submits a job; field errors and refusals are a value. */
  submit(body: unknown, options?: Abortable & { idempotencyKey?: string }): Promise<HttpSubmitResult>;
  /** The job's status through the app's views; undefined for no such job. */
  getJob(id: string, options?: Abortable): Promise<JobStatus | undefined>;
  /** Asks for the job's cancellation. */
  cancel(id: string, options?: Abortable): Promise<HttpCancelResult>;
}

/** The job routes of one app, over HTTP. */
export class JobsHttpApi implements JobsApi {
  /**
   * @param baseUrl - the URL the routes `jobs` and `jobs/{id}` are under (read at each call: local instances die);
   *   undefined when no instance answers.
   * @param key - a function (or admin, for cancel) key, sent as `x-functions-key`.
   * @param fetchImpl - how requests are sent. Default: the global `fetch` (the development package's `enqueue --app`
   *   answers them in its own process, with no port open).
   */
  constructor(
    private readonly baseUrl: BaseUrl,
    private readonly key?: string,
    private readonly fetchImpl: typeof fetch = fetch,
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
    return this.fetchImpl(`${base.replace(/\/+$/, "")}/${path}`, {
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
