import { resolve } from "node:path";
import { Writable } from "node:stream";
import { afterAll, describe, expect, it, vi } from "vitest";
import { runEnqueue } from "../../src/cli/enqueueCommand";
import { cancelJob, getJobStatus, runCoordinatorTick } from "../../src/app/operations";
import { FunctionsHost } from "../../dev/src/local/host";
import { openAppJobsApi } from "../../dev/src/cli/enqueueApp";
import { useAzurite } from "../support/azuriteFixture";
import { newTestApp, testAppSettings } from "../support/inProcessApp";

/**
 * Issue 43, hole 4: `enqueue --app --wait` runs the user's app's HTTP routes on 127.0.0.1 while it waits (up to a
 * day), against the storage the operator's environment names. They answered anyone: another local process, or a
 * browser page's no-cors POST, could step the leader down or cancel jobs with the operator's identity. The command
 * itself needs only submit and status (cancel for `--cancel`), and only it may call them: its host opens no port, and
 * answers the command's own calls in its process.
 */

const sink = () =>
  new Writable({
    write(_chunk, _encoding, callback) {
      callback();
    },
  });

describe("enqueue --app --wait opens no port: only its own calls reach the app's routes (issue 43, hole 4)", () => {
  const storage = useAzurite();
  afterAll(() => {
    vi.restoreAllMocks();
  });

  it("while it waits, its host listens on no port (no other process nor browser page reaches a route), and it still follows its job to the end", async () => {
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
    const target = { kind: "app" as const, entry: resolve(__dirname, "..", "..", "functions", "index.ts") };
    const opened = await openAppJobsApi(target, "submit", () => undefined);
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
        target,
        wait: true,
        timeoutS: 120,
        failOnItemFailures: false,
      },
      io,
      opened.api,
    ).finally(() => opened.stop());
    const id = await vi.waitFor(
      () => {
        const submitted = /Submitted job (\S+) with 1 items/.exec(stdout.join(""))?.[1];
        if (submitted === undefined) throw new Error("not submitted yet");
        return submitted;
      },
      { timeout: 30_000, interval: 50 },
    );
    const host = started.mock.contexts[0] as FunctionsHost | undefined;
    expect(host).toBeDefined();
    expect(host?.httpPort).toBeUndefined();
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
