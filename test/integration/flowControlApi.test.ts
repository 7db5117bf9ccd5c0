import { HttpRequest } from "@azure/functions";
import { beforeAll, describe, expect, it } from "vitest";
import { claimKey, keyDigest, submissionDigest } from "../../src/coordination/jobs/idempotency";
import { validateSubmission } from "../../src/coordination/jobs/submit";
import { keys } from "../../src/coordination/state/jobState";
import { sinkFor } from "../../src/host/invocation";
import { createRegistry } from "../../scripts/support/repoKinds";
import { useAzurite } from "../support/azuriteFixture";
import { invocationContext, postJob, registeredHandlers, timerTick } from "../support/registeredHandlers";
import { drainWorkQueue, testAppSettings } from "../support/inProcessApp";

/**
 * The flow-control fields of POST /api/jobs through the registered handlers on a real Azurite (docs/how-to/limit.md):
 * each bad field a 400 naming it and what is allowed, with nothing stored; one job per idempotency key — fifty
 * concurrent submits, a submitter that died between its claim and its spec, another body under the same key (409).
 */

const post = (body: unknown, headers: Record<string, string> = {}) => postJob(JSON.stringify(body), headers);
const context = invocationContext;
const good = {
  kind: "group-by",
  params: { format: "csv", keyField: "region", valueField: "amount" },
  items: [{ inline: "region,amount\neu,2\nus,3" }, { inline: "region,amount\neu,5" }],
};
const tick = timerTick;

function handlersOf() {
  const handlers = registeredHandlers();
  return {
    app: handlers.app,
    submit: handlers.submitJobHandler,
    get: handlers.getJobHandler,
    timer: handlers.coordinatorHandler,
  };
}

describe("POST /api/jobs: flow-control fields (the registered handlers, real Azurite)", () => {
  const env = useAzurite();
  let handlers: ReturnType<typeof handlersOf>;
  beforeAll(() => {
    Object.assign(process.env, testAppSettings(env.azurite.connectionString), { WEBSITE_INSTANCE_ID: "flow-test" });
    handlers = handlersOf();
  });
  const stored = () => handlers.app().system.list("", 10_000);
  const getJob = async (id: string) =>
    (
      await handlers.get(
        new HttpRequest({ method: "GET", url: `http://localhost/api/jobs/${id}`, params: { id } }),
        context(),
      )
    ).jsonBody as Record<string, unknown>;

  it.each([
    ["a priority of 0", { priority: 0 }, {}, "priority", /whole number from 1 \(most urgent\) to 9/],
    ["a priority of 10", { priority: 10 }, {}, "priority", /whole number from 1 \(most urgent\) to 9/],
    ["a priority that is not a whole number", { priority: 1.5 }, {}, "priority", /whole number/],
    ["a fairness key that is not a string", { fairnessKey: 7 }, {}, "fairnessKey", /string of 1 to 128 characters/],
    ["a fairness key too long", { fairnessKey: "t".repeat(129) }, {}, "fairnessKey", /1 to 128 characters/],
    ["a fairness key too long in bytes", { fairnessKey: "€".repeat(90) }, {}, "fairnessKey", /at most 256 bytes/],
    ["a notBefore that is not a time", { notBefore: "next tuesday" }, {}, "notBefore", /ISO 8601 time/],
    ["a notBefore over 7 days ahead", { notBefore: "2099-01-01T00:00:00Z" }, {}, "notBefore", /at most 7 days/],
    [
      "a notBefore after the deadline",
      { notBefore: new Date(Date.now() + 7_200_000).toISOString(), timeoutS: 3600 },
      {},
      "notBefore",
      /before the job's deadline/,
    ],
    ["an idempotency key too long", { idempotencyKey: "k".repeat(201) }, {}, "idempotencyKey", /1 to 200 printable/],
    ["an idempotency key header too long", {}, { "idempotency-key": "k".repeat(201) }, "Idempotency-Key", /1 to 200/],
    [
      "a body key that differs from the header's",
      { idempotencyKey: "one" },
      { "idempotency-key": "two" },
      "idempotencyKey",
      /differs from the Idempotency-Key header/,
    ],
  ])(
    "%s answers 400 naming the field and what is allowed; nothing is stored",
    async (_name, fields, headers, field, message) => {
      const before = await stored();
      const response = await handlers.submit(post({ ...good, ...fields }, headers), context());
      expect(response.status).toBe(400);
      const errors = (response.jsonBody as { errors: { field: string; message: string }[] }).errors;
      expect(errors.find((error) => error.field === field)?.message).toMatch(message);
      expect(await stored()).toEqual(before);
    },
  );

  it("a job with a priority, a fairness key and a notBefore shows them, and is scheduled, nothing sent, until then", async () => {
    const notBefore = new Date(Date.now() + 3_600_000).toISOString();
    const response = await handlers.submit(
      post({ ...good, priority: 2, fairnessKey: "tenant-7", notBefore }),
      context(),
    );
    expect(response.status).toBe(202);
    const { id } = response.jsonBody as { id: string };
    expect(await getJob(id)).toMatchObject({ status: "pending", priority: 2, fairnessKey: "tenant-7", notBefore });
    expect(await handlers.app().system.readText(keys.spec(id))).toMatch(/^\{"v":2,/);
    await handlers.timer(tick, context());
    await handlers.timer(tick, context());
    expect(await getJob(id)).toMatchObject({ status: "scheduled", progress: { dispatched: 0 }, notBefore });
    expect(await handlers.app().workQueue.approximateCount()).toBe(0);
  });

  it("a job whose notBefore has passed runs at once, and shows it", async () => {
    const notBefore = new Date(Date.now() - 1000).toISOString();
    const response = await handlers.submit(post({ ...good, notBefore }), context());
    const { id } = response.jsonBody as { id: string };
    for (let round = 0; round < 5 && (await getJob(id)).status !== "completed"; round++) {
      await handlers.timer(tick, context());
      await drainWorkQueue(handlers.app(), sinkFor(context()));
    }
    expect(await getJob(id)).toMatchObject({ status: "completed", notBefore, progress: { done: 2 } });
  });

  it("fifty concurrent submits with one Idempotency-Key make one job: one 202, 49 × 200 with the same id", async () => {
    const before = (await stored()).filter((name) => name.endsWith("/spec.json")).length;
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => handlers.submit(post(good, { "idempotency-key": '"burst-1"' }), context())),
    );
    expect(responses.map((response) => response.status).sort()).toEqual([
      ...Array.from({ length: 49 }, () => 200),
      202,
    ]);
    const ids = new Set(responses.map((response) => (response.jsonBody as { id: string }).id));
    expect(ids.size).toBe(1);
    expect(responses.filter((response) => (response.jsonBody as { replayed?: true }).replayed)).toHaveLength(49);
    expect((await stored()).filter((name) => name.endsWith("/spec.json")).length).toBe(before + 1);
  });

  it("a submitter that died between its claim and its spec: the retry completes the same job, and it runs", async () => {
    const app = handlers.app();
    const validated = validateSubmission(good, createRegistry());
    if (!validated.ok) throw new Error("invalid");
    // The claim as the dead submitter wrote it, and nothing after it.
    const claim = await claimKey(app.system, { key: "crashed", submissionDigest: submissionDigest(validated.value) });
    expect(claim.outcome).toBe("claimed");
    const jobId = claim.outcome === "claimed" ? claim.jobId : "";
    const retry = await handlers.submit(post({ ...good, idempotencyKey: "crashed" }), context());
    expect(retry).toMatchObject({ status: 200, jsonBody: { id: jobId, itemCount: 2, replayed: true } });
    for (let round = 0; round < 5 && (await getJob(jobId)).status !== "completed"; round++) {
      await handlers.timer(tick, context());
      await drainWorkQueue(app, sinkFor(context()));
    }
    expect(await getJob(jobId)).toMatchObject({
      status: "completed",
      idempotencyKey: "crashed",
      progress: { done: 2 },
    });
  });

  it("the same key with another body is refused with 409 naming the first job; nothing is stored", async () => {
    const first = await handlers.submit(post(good, { "idempotency-key": "once" }), context());
    expect(first.status).toBe(202);
    const { id } = first.jsonBody as { id: string };
    const before = await stored();
    const other = await handlers.submit(post({ ...good, priority: 1 }, { "idempotency-key": "once" }), context());
    expect(other).toMatchObject({ status: 409, headers: { location: `/api/jobs/${id}` } });
    const error = other.jsonBody as { error: string; errors: { field: string; message: string }[] };
    expect(error.error).toMatch(/idempotency key was used for another submission/);
    expect(error.errors).toEqual([
      {
        field: "idempotencyKey",
        message: expect.stringMatching(new RegExp(`different submission \\(job ${id}\\)`)) as unknown,
      },
    ]);
    expect(await stored()).toEqual(before);
    expect(await handlers.app().system.readText(keys.claim(keyDigest("once")))).toMatch(new RegExp(id));
  });
});
