import { describe, expect, it } from "vitest";
import { keyDigest, resolveIdempotencyKey } from "../../src/coordination/jobs/idempotency";
import { removeExpiredJobs } from "../../src/coordination/jobs/retention";
import { storeSubmissionOnce, type SubmitPorts } from "../../src/coordination/jobs/submitOnce";
import { validateSubmission, type Submission } from "../../src/coordination/jobs/submit";
import { keys } from "../../src/coordination/state/jobState";
import { JobStore } from "../../src/coordination/state/jobStore";
import { runCoordinationStep } from "../../src/coordination/step/step";
import { FencedStateStore } from "../../src/library/fencing/FencedStateStore";
import { createRegistry } from "../../scripts/support/repoKinds";
import { ONE_PASS, item, params, readJob, work, world } from "../support/coordinationWorld";
import { fakeTerm, type MemoryFiles } from "../support/memoryPorts";

/**
 * One job per submission (docs/contributing/flow-control-submission.md, "Idempotency"), on in-memory ports: the claim,
 * replays, conflicts, a submitter that dies at each point, the leader's check of the claim, and the claim's removal
 * with its job. On Azurite through the HTTP API: `test/integration/idempotency.test.ts`.
 */

const registry = createRegistry();
const body = (extra: Record<string, unknown> = {}) => ({
  kind: "group-by",
  params,
  items: [item("a", 1), item("b", 2)],
  ...extra,
});

/** A submission as the app validates it. */
function validated(raw: unknown): Submission {
  const result = validateSubmission(raw, registry);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.value;
}

function submit(ports: SubmitPorts, key: string, raw: unknown = body()) {
  return storeSubmissionOnce(ports, { ...validated(raw), idempotencyKey: key });
}

/** The ids of the jobs whose spec is stored. */
async function storedJobs(system: MemoryFiles): Promise<string[]> {
  return (await system.list("jobs/", 10_000))
    .filter((name) => name.endsWith("/spec.json"))
    .map((name) => name.split("/")[1] ?? "");
}

describe("idempotency key: which one, and how it is written", () => {
  it("takes the body's or the header's (an RFC 8941 string or a bare value); both must agree", () => {
    expect(resolveIdempotencyKey("a", undefined)).toEqual({ ok: true, key: "a" });
    expect(resolveIdempotencyKey(undefined, '"8e03978e-40d5"')).toEqual({ ok: true, key: "8e03978e-40d5" });
    expect(resolveIdempotencyKey(undefined, '"a\\"b"')).toEqual({ ok: true, key: 'a"b' });
    expect(resolveIdempotencyKey(undefined, "plain")).toEqual({ ok: true, key: "plain" });
    expect(resolveIdempotencyKey("same", '"same"')).toEqual({ ok: true, key: "same" });
    expect(resolveIdempotencyKey("one", "two")).toEqual({
      ok: false,
      error: {
        field: "idempotencyKey",
        message: expect.stringMatching(/differs from the Idempotency-Key header/) as unknown,
      },
    });
    for (const bad of ['""', "x".repeat(201), "tab\there", "naïve"])
      expect(resolveIdempotencyKey(undefined, bad)).toMatchObject({
        ok: false,
        error: { field: "Idempotency-Key", message: expect.stringMatching(/1 to 200 printable ASCII/) as unknown },
      });
  });
});

describe("one job per submission (in-memory ports)", () => {
  it("a retry with the same key and body answers the first job's id and stores nothing more; another body is refused", async () => {
    const { deps, system } = world();
    const first = await submit(deps, "order-17");
    expect(first).toMatchObject({ ok: true, itemCount: 2, replayed: false, wrote: true });
    const blobs = [...system.blobs.keys()].sort();
    // The same submission with its fields in another order is the same submission.
    const again = await submit(deps, "order-17", { items: body().items, params, kind: "group-by" });
    expect(again).toEqual({ ok: true, id: first.ok ? first.id : "", itemCount: 2, replayed: true, wrote: false });
    expect([...system.blobs.keys()].sort()).toEqual(blobs);
    const other = await submit(deps, "order-17", body({ items: [item("c", 3)] }));
    expect(other).toMatchObject({
      ok: false,
      conflict: { jobId: first.ok ? first.id : "" },
      errors: [
        { field: "idempotencyKey", message: expect.stringMatching(/was used for a different submission/) as unknown },
      ],
    });
    expect([...system.blobs.keys()].sort()).toEqual(blobs);
    expect(await storedJobs(system)).toHaveLength(1);
  });

  it("fifty concurrent submits with one key make one job, and all answer its id", async () => {
    const { deps, system, state } = world();
    const results = await Promise.all(Array.from({ length: 50 }, () => submit(deps, "burst")));
    const ids = new Set(results.map((result) => (result.ok ? result.id : "refused")));
    expect(ids.size).toBe(1);
    expect(results.filter((result) => result.ok && !result.replayed)).toHaveLength(1);
    expect(await storedJobs(system)).toEqual([...ids]);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, [...ids][0] ?? "")).toMatchObject({ status: "running", itemCount: 2 });
  });

  it.each([
    ["after its claim, before any chunk", (name: string) => name.includes("/items/")],
    ["after its chunks, before its spec", (name: string) => name.endsWith("/spec.json")],
    ["after its spec, before its inbox marker", (name: string) => name.startsWith("inbox/")],
  ])("a submitter that dies %s: a retry completes the same job, which then runs", async (_when, dies) => {
    const { deps, work: queue, state, system } = world();
    const writeText = system.writeText.bind(system);
    const createText = system.createText.bind(system);
    let dead = true;
    system.writeText = (name, text) => (dead && dies(name) ? Promise.reject(new Error("died")) : writeText(name, text));
    system.createText = (name, text) =>
      dead && dies(name) ? Promise.reject(new Error("died")) : createText(name, text);
    await expect(submit(deps, "k")).rejects.toThrow("died");
    const claimed = JSON.parse((await system.readText(keys.claim(keyDigest("k")))) ?? "{}") as { jobId: string };
    dead = false;
    const retry = await submit(deps, "k");
    expect(retry).toMatchObject({ ok: true, id: claimed.jobId, replayed: true, wrote: true });
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, claimed.jobId)).toMatchObject({ status: "completed", doneCount: 2 });
    expect(await storedJobs(system)).toEqual([claimed.jobId]);
  });

  it("a manifest that changed since the first submission with the key is refused; a bad manifest releases the key", async () => {
    const { deps, inputs } = world();
    inputs.blobs.set("m.ndjson", `${JSON.stringify(item("a", 1))}\n`);
    const first = await submit(deps, "m", { kind: "group-by", params, manifest: "m.ndjson" });
    expect(first).toMatchObject({ ok: true, itemCount: 1 });
    expect(await submit(deps, "m", { kind: "group-by", params, manifest: "m.ndjson" })).toMatchObject({
      ok: true,
      replayed: true,
    });
    inputs.blobs.set("m.ndjson", `${JSON.stringify(item("a", 2))}\n`);
    expect(await submit(deps, "m", { kind: "group-by", params, manifest: "m.ndjson" })).toMatchObject({
      ok: false,
      conflict: {},
      errors: [
        { field: "idempotencyKey", message: expect.stringMatching(/manifest blob had other content/) as unknown },
      ],
    });

    inputs.blobs.set("bad.ndjson", "not json\n");
    const refused = await submit(deps, "b", { kind: "group-by", params, manifest: "bad.ndjson" });
    expect(refused).toMatchObject({ ok: false, errors: [{ field: "manifest" }] });
    expect(refused).not.toHaveProperty("conflict");
    expect(await deps.system.readText(keys.claim(keyDigest("b")))).toBeUndefined();
    inputs.blobs.set("bad.ndjson", `${JSON.stringify(item("z", 1))}\n`);
    expect(await submit(deps, "b", { kind: "group-by", params, manifest: "bad.ndjson" })).toMatchObject({
      ok: true,
      replayed: false,
    });
  });

  it("the leader registers a keyed job only while its key's claim names it", async () => {
    const { deps, events, state } = world();
    const stored = await submit(deps, "gone");
    if (!stored.ok) throw new Error("refused");
    await deps.system.delete(keys.claim(keyDigest("gone")));
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await readJob(state, stored.id)).toBeUndefined();
    expect(await deps.system.readText(keys.inbox(stored.id))).toBeUndefined();
    expect(events.filter((event) => event.type === "job-registered")).toHaveLength(0);
  });

  it("the key is remembered as long as its job: retention removes the claim with the job, and the key then makes a new job", async () => {
    let nowMs = 1_000_000;
    const { deps, work: queue } = world({ now: () => nowMs, jobRetentionMs: 3_600_000 });
    const first = await submit(deps, "kept");
    if (!first.ok) throw new Error("refused");
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    await work(deps, queue);
    await runCoordinationStep(deps, fakeTerm(1), ONE_PASS);
    expect(await submit(deps, "kept")).toMatchObject({ ok: true, id: first.id, replayed: true });
    nowMs += 3_600_000 + 1;
    const jobs = new JobStore(new FencedStateStore(deps.state, fakeTerm(2)));
    expect(await removeExpiredJobs(deps, jobs, {})).toMatchObject({ removed: 1 });
    expect(await deps.system.readText(keys.claim(keyDigest("kept")))).toBeUndefined();
    const next = await submit(deps, "kept");
    expect(next).toMatchObject({ ok: true, replayed: false });
    expect(next.ok && next.id).not.toBe(first.id);
  });
});
