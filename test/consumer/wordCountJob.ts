import { expect } from "vitest";
import { InstanceProcess, lastOutput, type InstanceState } from "../../dev/src/local/instances";
import { delay } from "../../src/library/util/delay";

/**
 * The consumer app (test/consumer/app) run as a Function app on the local host, one instance, on `connectionString`:
 * a job of its own async kind (word-count), submitted over HTTP, must complete with the right aggregate, and the
 * status page must answer. `appEntry` is the app as installed in a user's project, or as its deploy folder holds it.
 */
export async function runWordCountJob(appEntry: string, hostJson: string, connectionString: string): Promise<void> {
  const texts = Array.from({ length: 40 }, (_, i) => `item ${i} has ${"word ".repeat(i % 5)}here`);
  const expected = texts.reduce(
    (sum, text) => {
      const words = text.split(/\s+/).filter((word) => word !== "");
      return { words: sum.words + words.length, letters: sum.letters + words.join("").length };
    },
    { words: 0, letters: 0 },
  );
  const ready = Promise.withResolvers<InstanceState>();
  const logs: string[] = [];
  const instance = new InstanceProcess(
    "consumer-1",
    {
      PATH: process.env.PATH,
      COORDINATION_STORAGE: connectionString,
      AzureWebJobsStorage: connectionString,
      WEBSITE_SITE_NAME: "consumer-app",
      LOCAL_APP_ENTRY: appEntry,
      LOCAL_HOST_JSON: hostJson,
      LOCAL_MESSAGE_LEASE_SECONDS: "30",
      COORDINATOR_SCHEDULE: "*/2 * * * * *",
      // A step must end before the next tick: the app refuses a budget as long as the interval.
      STEP_BUDGET_MS: "1500",
    },
    {
      onReady: (state) => ready.resolve(state),
      onEvent: () => undefined,
      onLog: (_state, line) => logs.push(`${line.level}: ${line.message}`),
      onExit: (state) => ready.reject(new Error(`the instance exited:\n${lastOutput(state)}`)),
    },
  );
  // Bounded well inside the callers' test timeout, so a failure names what the instance said, not just "timed out".
  const deadline = Date.now() + 120_000;
  const timer = setTimeout(() => {
    ready.reject(new Error(`the instance was not ready within 120 s:\n${logs.slice(-30).join("\n")}`));
  }, deadline - Date.now());
  try {
    const { httpPort } = await ready.promise.finally(() => {
      clearTimeout(timer);
    });
    const base = `http://127.0.0.1:${httpPort ?? 0}/api/words`;
    const submitted = await fetch(`${base}/jobs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ kind: "word-count", items: texts.map((inline) => ({ inline })) }),
    });
    const answer = (await submitted.json()) as { id: string };
    expect(submitted.status, JSON.stringify(answer)).toBe(202);
    const { id } = answer;
    let status: { status: string; aggregate?: unknown; progress?: unknown } = { status: "pending" };
    while (Date.now() < deadline && !["completed", "failed"].includes(status.status)) {
      await delay(500);
      status = (await (await fetch(`${base}/jobs/${id}`)).json()) as typeof status;
    }
    expect(status, `instance ${instance.state.role}:\n${logs.slice(-30).join("\n")}`).toMatchObject({
      status: "completed",
      progress: { total: 40, done: 40, failed: 0 },
      aggregate: { ...expected, distinctKeys: 40 },
    });
    expect((await fetch(`${base}/status`)).status).toBe(200);
  } finally {
    await instance.stop(10_000);
  }
}
