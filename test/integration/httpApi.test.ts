import { HttpRequest } from "@azure/functions";
import { beforeAll, describe, expect, it } from "vitest";
import { sinkFor } from "../../src/host/invocation";
import { useAzurite } from "../support/azuriteFixture";
import { invocationContext, postJob, registeredHandlers } from "../support/registeredHandlers";
import { drainWorkQueue, testAppSettings } from "../support/inProcessApp";

const post = postJob;
const context = invocationContext;
const good = {
  kind: "group-by",
  params: { format: "csv", keyField: "region", valueField: "amount" },
  items: [{ inline: "region,amount\neu,2\nus,3" }, { inline: "region,amount\neu,5" }],
};

const handlersOf = registeredHandlers;

describe("HTTP API handlers (the registered handlers, real Azurite)", () => {
  const env = useAzurite();
  let handlers: ReturnType<typeof handlersOf>;
  beforeAll(() => {
    Object.assign(process.env, testAppSettings(env.azurite.connectionString), { WEBSITE_INSTANCE_ID: "http-test" });
    handlers = handlersOf();
  });

  it.each([
    ["malformed JSON", "{nope", "(body)", /not valid JSON/],
    ["a wrong schema", JSON.stringify({ kind: "group-by", params: {}, items: [{ text: "x" }] }), "items.0", /./],
    ["no items", JSON.stringify({ ...good, items: [] }), "items", /at least one item/],
    [
      "an unknown task kind",
      JSON.stringify({ ...good, kind: "mystery" }),
      "kind",
      /unknown task kind "mystery"; known kinds: group-by/,
    ],
    [
      "bad params",
      JSON.stringify({ ...good, params: { format: "xml", keyField: "", valueField: "amount" } }),
      "params.format",
      /./,
    ],
    [
      "an oversized inline item",
      JSON.stringify({ ...good, items: [{ inline: "x".repeat(41_000) }] }),
      "items.0.inline",
      /^the item is 41013 bytes as JSON, .*; at most 40960 are allowed/,
    ],
    [
      "neither items nor a manifest",
      JSON.stringify({ kind: good.kind, params: good.params }),
      "items",
      /exactly one of "items" .* or "manifest"/,
    ],
    [
      "both items and a manifest",
      JSON.stringify({ ...good, manifest: "m.ndjson" }),
      "manifest",
      /exactly one of "items" .* or "manifest"/,
    ],
    [
      "a manifest that does not exist",
      JSON.stringify({ kind: good.kind, params: good.params, manifest: "none.ndjson" }),
      "manifest",
      /blob "none.ndjson" does not exist in the input container/,
    ],
    [
      "a deadline in the past",
      JSON.stringify({ ...good, deadline: "2020-01-01T00:00:00Z" }),
      "deadline",
      /must be in the future/,
    ],
    ["a timeout over 7 days", JSON.stringify({ ...good, timeoutS: 8 * 86_400 }), "timeoutS", /at most 604800 s/],
    [
      "a concurrency limit of 0",
      JSON.stringify({ ...good, limits: { concurrency: 0 } }),
      "limits.concurrency",
      /^must be a whole number from 1 to 10,000; it is 0$/,
    ],
    [
      "a rate limit that is not a whole number",
      JSON.stringify({ ...good, limits: { rate: { limit: 2.5, periodSeconds: 1 } } }),
      "limits.rate.limit",
      /^must be a whole number from 1 to 100,000; it is 2.5$/,
    ],
    [
      "a rate period over a day",
      JSON.stringify({ ...good, limits: { rate: { limit: 5, periodSeconds: 90_000 } } }),
      "limits.rate.periodSeconds",
      /from 1 to 86,400; it is 90000/,
    ],
    [
      "a burst over its limit",
      JSON.stringify({ ...good, limits: { rate: { limit: 10, periodSeconds: 1, burst: 20 } } }),
      "limits.rate.burst",
      /from 1 to 10; it is 20/,
    ],
    [
      "limits that are not an object",
      JSON.stringify({ ...good, limits: "fast" }),
      "limits",
      /must be an object with concurrency and\/or rate; it is "fast"/,
    ],
  ])("POST /api/jobs with %s answers 400 naming the field", async (_name, body, field, message) => {
    const response = await handlers.submitJobHandler(post(body), context());
    expect(response.status).toBe(400);
    const errors = (response.jsonBody as { errors: { field: string; message: string }[] }).errors;
    expect(errors.find((e) => e.field === field)?.message).toMatch(message);
  });

  it("a submission refused for its limits stores nothing: no spec, no chunk, no inbox marker", async () => {
    const app = handlers.app();
    const before = await app.system.list("", 1000);
    const response = await handlers.submitJobHandler(
      post(JSON.stringify({ ...good, limits: { concurrency: -1, rate: { limit: 0, periodSeconds: 0 } } })),
      context(),
    );
    expect(response.status).toBe(400);
    const errors = (response.jsonBody as { errors: { field: string }[] }).errors;
    expect(errors.map((error) => error.field).sort()).toEqual([
      "limits.concurrency",
      "limits.rate.limit",
      "limits.rate.periodSeconds",
    ]);
    expect(await app.system.list("", 1000)).toEqual(before);
  });

  it("POST /api/jobs with several faults answers 400 naming every one at once", async () => {
    const body = JSON.stringify({ kind: "mystery", items: [{ inline: 1 }], timeoutS: 0, color: "red" });
    const response = await handlers.submitJobHandler(post(body), context());
    expect(response.status).toBe(400);
    const errors = (response.jsonBody as { errors: { field: string; message: string }[] }).errors;
    expect(errors.map((error) => error.field).sort()).toEqual(["(body)", "items.0", "kind", "timeoutS"]);
  });

  it("POST /api/jobs with a body over the limit answers 413 without reading it, pointing to manifests", async () => {
    const response = await handlers.submitJobHandler(
      post("{}", { "content-length": String(64 * 1024 * 1024) }),
      context(),
    );
    expect(response.status).toBe(413);
    expect((response.jsonBody as { error: string }).error).toMatch(/name the items in a manifest/);
  });

  it("a good job submitted after bad ones completes, undisturbed; GET /api/jobs/{id} shows progress and the aggregate", async () => {
    const submitted = await handlers.submitJobHandler(post(JSON.stringify(good)), context());
    expect(submitted.status).toBe(202);
    const { id } = submitted.jsonBody as { id: string };
    const get = (): Promise<{ status?: number; jsonBody?: unknown }> =>
      handlers.getJobHandler(
        new HttpRequest({ method: "GET", url: `http://localhost/api/jobs/${id}`, params: { id } }),
        context(),
      );
    expect((await get()).jsonBody).toMatchObject({ status: "pending", progress: { total: 2 } });
    const app = handlers.app();
    for (let round = 0; round < 5; round++) {
      await handlers.coordinatorHandler(
        {
          isPastDue: false,
          schedule: { adjustForDST: false },
          scheduleStatus: { last: "", next: "", lastUpdated: "" },
        },
        context(),
      );
      await drainWorkQueue(app, sinkFor(context()));
    }
    expect((await get()).jsonBody).toMatchObject({
      status: "completed",
      progress: { total: 2, done: 2, failed: 0 },
      aggregate: { eu: { count: 2, sum: 7, min: 2, max: 5 }, us: { count: 1, sum: 3 } },
    });
    expect((await get()).status).toBe(200);
    expect(
      (
        await handlers.getJobHandler(
          new HttpRequest({ method: "GET", url: "http://localhost/api/jobs/none", params: { id: "none" } }),
          context(),
        )
      ).status,
    ).toBe(404);
  });

  it("DELETE /api/jobs/{id}: 404 for no such job; 202 with the id (again until the leader applies it); then the job is cancelled and DELETE answers 409", async () => {
    const del = (id: string): Promise<{ status?: number; jsonBody?: unknown }> =>
      handlers.cancelJobHandler(
        new HttpRequest({ method: "DELETE", url: `http://localhost/api/jobs/${id}`, params: { id } }),
        context(),
      );
    const get = async (id: string): Promise<unknown> =>
      (
        await handlers.getJobHandler(
          new HttpRequest({ method: "GET", url: `http://localhost/api/jobs/${id}`, params: { id } }),
          context(),
        )
      ).jsonBody;
    expect(await del("no-such-job")).toMatchObject({ status: 404, jsonBody: { error: 'No job "no-such-job".' } });
    const submitted = await handlers.submitJobHandler(post(JSON.stringify({ ...good, timeoutS: 3600 })), context());
    const { id } = submitted.jsonBody as { id: string };
    expect(await del(id)).toMatchObject({ status: 202, jsonBody: { id, cancelRequested: true } });
    expect(await del(id)).toMatchObject({ status: 202, jsonBody: { id, cancelRequested: true } });
    expect(await get(id)).toMatchObject({
      status: "pending",
      cancelRequested: true,
      deadline: expect.any(String) as unknown,
    });
    await handlers.coordinatorHandler(
      { isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: "", next: "", lastUpdated: "" } },
      context(),
    );
    const cancelled = await get(id);
    expect(cancelled).toMatchObject({
      status: "cancelled",
      progress: { total: 2, dispatched: 0, done: 0, failed: 0, skipped: 2 },
      endedAt: expect.any(String) as unknown,
    });
    expect(cancelled).not.toHaveProperty("cancelRequested");
    expect(await del(id)).toMatchObject({ status: 409, jsonBody: { id, status: "cancelled" } });
  });

  it("GET /api/leader describes the last term; POST /api/leader/step-down answers 409 when nobody holds the lease", async () => {
    const leader = await handlers.getLeaderHandler();
    expect(leader.jsonBody).toMatchObject({
      epoch: expect.any(Number) as unknown,
      transitions: expect.any(Number) as unknown,
    });
    expect((leader.jsonBody as { epoch: number }).epoch).toBeGreaterThanOrEqual(1);
    expect(
      (
        await handlers.stepDownHandler(
          new HttpRequest({ method: "POST", url: "http://localhost/api/leader/step-down" }),
          context(),
        )
      ).status,
    ).toBe(409);
  });

  it("GET /api/status serves the self-contained page: HTML under a nonce CSP, the last epoch and the ended job", async () => {
    const response = await handlers.getStatusHandler();
    expect(response.status).toBe(200);
    const headers = response.headers as Record<string, string>;
    expect(headers["content-type"]).toBe("text/html; charset=utf-8");
    const nonce = /script-src 'nonce-([^']+)'/.exec(headers["content-security-policy"] ?? "")?.[1] ?? "(none)";
    const page = response.body as string;
    expect(typeof page).toBe("string");
    expect(page).toContain(`<script nonce="${nonce}">`);
    const { epoch } = (await handlers.getLeaderHandler()).jsonBody as { epoch: number };
    expect(page).toContain(`<dd data-field="leader-epoch">${epoch}</dd>`);
    expect(page).toMatch(
      /<tr data-job="[a-z0-9-]+">[\s\S]*?<span class="status completed">completed<\/span>[\s\S]*?data-field="done">2</,
    );
    // A second response gets a fresh nonce.
    const again = (await handlers.getStatusHandler()).headers as Record<string, string>;
    expect(again["content-security-policy"]).not.toContain(nonce);
  });

  it("a job whose state this instance cannot read (a newer version's, during a rolling deploy): GET and DELETE answer 503 naming why, and DELETE stores nothing", async () => {
    const submitted = await handlers.submitJobHandler(post(JSON.stringify(good)), context());
    const { id } = submitted.jsonBody as { id: string };
    await handlers.coordinatorHandler(
      { isPastDue: false, schedule: { adjustForDST: false }, scheduleStatus: { last: "", next: "", lastUpdated: "" } },
      context(),
    );
    const app = handlers.app();
    const stored = await app.state.read(`jobs/${id}.json`);
    if (stored === undefined) throw new Error("not registered");
    await app.state.write(`jobs/${id}.json`, { ...(stored.value as object), status: "paused" }, stored.epoch + 1, {
      ifMatch: stored.etag,
    });
    const request = (method: string): HttpRequest =>
      new HttpRequest({ method, url: `http://localhost/api/jobs/${id}`, params: { id } });
    const why = /its state is not in a shape this version reads \(status: .*\): a newer version wrote it/;
    const got = await handlers.getJobHandler(request("GET"), context());
    expect(got).toMatchObject({ status: 503, headers: { "retry-after": "60" } });
    expect((got.jsonBody as { error: string }).error).toMatch(why);
    const deleted = await handlers.cancelJobHandler(request("DELETE"), context());
    expect(deleted).toMatchObject({ status: 503, headers: { "retry-after": "60" } });
    expect((deleted.jsonBody as { error: string }).error).toMatch(/cannot be cancelled by this instance: its state/);
    expect(await app.system.readText(`cancel/${id}`)).toBeUndefined();
  });
});
