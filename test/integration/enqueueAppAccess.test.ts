import { request } from "node:http";
import { resolve } from "node:path";
import { Writable } from "node:stream";
import { afterAll, describe, expect, it, vi } from "vitest";
import { runEnqueue } from "../../src/cli/enqueueCommand";
import { cancelJob, getJobStatus, runCoordinatorTick } from "../../src/app/operations";
import { FunctionsHost, type FunctionsHostOptions } from "../../src/local/host";
import { useAzurite } from "../support/azuriteFixture";
import { newTestApp, testAppSettings } from "../support/inProcessApp";

/**
 * Issue 43, hole 4: `enqueue --app --wait` runs the user's app's HTTP routes on 127.0.0.1 while it waits (up to a
 * day), against the storage the operator's environment names. They answered anyone: another local process, or a
 * browser page's no-cors POST, could step the leader down or cancel jobs with the operator's identity. The command
 * itself needs only submit and status (cancel for `--cancel`), and only it may call them.
 */

/** A raw request to the listener, as another local process (or a browser, with its own Host and no key) sends it. */
function probe(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number }> {
  return new Promise((done, fail) => {
    const sent = request({ host: "127.0.0.1", port, method, path, headers }, (response) => {
      response.resume();
      response.on("end", () => done({ status: response.statusCode ?? 0 }));
    });
    sent.on("error", fail);
    sent.end(method === "GET" || method === "DELETE" ? undefined : "{}");
  });
}

const sink = () =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });

describe("enqueue --app --wait serves its own requests only (issue 43, hole 4)", () => {
  const storage = useAzurite();
  afterAll(() => {
    vi.restoreAllMocks();
  });

  it("while it waits, no other caller reaches a route — not submit nor status without its key, not cancel or step-down at all — and the command still submits and follows its job", async () => {
    const settings = { ...testAppSettings(storage.azurite.connectionString), STEP_BUDGET_MS: "3000" };
    Object.assign(process.env, settings);
    // The command's host, as it starts (the spy calls the real start): whose port the probes knock on.
    const started = vi.spyOn(FunctionsHost.prototype, "start");
    const stdout: string[] = [];
    const io = {
      stdout: new Writable({
        write(chunk: Buffer, _encoding, callback) {
          stdout.push(chunk.toString());
          callback();
        },
      }),
      stderr: sink(),
    };
    const waiting = runEnqueue(
      {
        action: {
          kind: "submit",
          body: {
            kind: "group-by",
            params: { format: "csv", keyField: "region", valueField: "amount" },
            items: [{ inline: "region,amount\neu,1" }],
          },
        },
        target: { kind: "app", entry: resolve(__dirname, "..", "..", "functions", "index.ts") },
        wait: true,
        timeoutS: 120,
      },
      io,
    );
    const id = await vi.waitFor(
      () => {
        const submitted = /Submitted job (\S+) with 1 items/.exec(stdout.join(""))?.[1];
        if (submitted === undefined) throw new Error("not submitted yet");
        return submitted;
      },
      { timeout: 30_000, interval: 50 },
    );
    const host = started.mock.contexts[0] as FunctionsHost | undefined;
    const port = host?.httpPort;
    if (port === undefined) throw new Error("the command's host serves no HTTP port");

    // Another process on the machine, with the right Host and no key.
    expect(await probe(port, "POST", "/api/leader/step-down")).toMatchObject({ status: 401 });
    expect(await probe(port, "DELETE", `/api/jobs/${id}`)).toMatchObject({ status: 401 });
    expect(await probe(port, "GET", `/api/jobs/${id}`)).toMatchObject({ status: 401 });
    expect(await probe(port, "POST", "/api/jobs", { "content-type": "text/plain" })).toMatchObject({ status: 401 });
    // A browser page's no-cors POST: its own origin's Host (a DNS name rebound to 127.0.0.1), a safelisted type.
    expect(
      await probe(port, "POST", "/api/leader/step-down", {
        host: `attacker.example:${port}`,
        origin: "https://attacker.example",
        "content-type": "text/plain",
      }),
    ).toMatchObject({ status: 403 });
    // Even with its key (were it to leak), only the routes the command calls: not cancel, not step-down.
    const key = (host as unknown as { options: FunctionsHostOptions }).options.httpAccess?.key ?? "";
    expect(key).toMatch(/^[\w-]{43}$/);
    const keyed = { "x-functions-key": key };
    expect(await probe(port, "POST", "/api/leader/step-down", keyed)).toMatchObject({ status: 404 });
    expect(await probe(port, "DELETE", `/api/jobs/${id}`, keyed)).toMatchObject({ status: 404 });
    expect(await probe(port, "GET", "/api/status", keyed)).toMatchObject({ status: 404 });
    expect(await probe(port, "GET", `/api/jobs/${id}`, keyed)).toMatchObject({ status: 200 });
    const untouched = await getJobStatus(newTestApp(storage.azurite.connectionString, settings).app, id);
    expect(untouched).toMatchObject({ status: "pending" });
    expect(untouched?.cancelRequested).toBeUndefined();

    // The command still follows its job to its end: the operator cancels it, a leader's step ends it.
    const { app, sink: events } = newTestApp(storage.azurite.connectionString, settings);
    expect(await cancelJob(app, id)).toMatchObject({ outcome: "requested" });
    await runCoordinatorTick(app, events);
    expect(await waiting).toBe(3);
    expect(stdout.join("")).toMatch(/"status": "cancelled"/);
  });
});
