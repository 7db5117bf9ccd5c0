import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lookupKind } from "../../examples/rate-limited-api/lookupKind";
import { defineTaskKind } from "../../src/coordination/kinds/taskKinds";
import { runJobToEnd } from "../support/flowHarness";

/**
 * A partner API on loopback with the terms the example kind declares: it answers 429 to any request that would make
 * more than 10 run at once, or 2 of one account (as a real one would), and records when each request arrived (its
 * rate is checked on the kind's calls, below).
 */
function strictApi() {
  const arrivals: number[] = [];
  const running = new Map<string, number>();
  let total = 0;
  const seen = { refused: [] as string[], peak: 0, peakPerAccount: 0 };
  const server: Server = createServer((request, response) => {
    const account = decodeURIComponent((request.url ?? "").split("/records/")[1] ?? "").split("/")[0] ?? "";
    arrivals.push(performance.now());
    const mine = running.get(account) ?? 0;
    if (total >= 10 || mine >= 2) {
      seen.refused.push(`${total} running, ${mine} of ${account}`);
      response.writeHead(429).end();
      return;
    }
    total++;
    running.set(account, mine + 1);
    seen.peak = Math.max(seen.peak, total);
    seen.peakPerAccount = Math.max(seen.peakPerAccount, mine + 1);
    setTimeout(() => {
      total--;
      running.set(account, (running.get(account) ?? 1) - 1);
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    }, 15);
  });
  return { server, seen, arrivals };
}

/** The most of `times` in any window of `windowMs` (every window, not only aligned ones). */
function peakIn(times: readonly number[], windowMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let peak = 0;
  for (let from = 0, to = 0; to < sorted.length; to++) {
    while ((sorted[to] ?? 0) - (sorted[from] ?? 0) >= windowMs) from++;
    peak = Math.max(peak, to - from + 1);
  }
  return peak;
}

describe("an example kind that calls a rate-limited API (examples/rate-limited-api, issue 42)", () => {
  const api = strictApi();
  let baseUrl = "";
  beforeAll(async () => {
    await new Promise<void>((resolve) => api.server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    await new Promise((resolve) => api.server.close(resolve));
  });

  it("its items never get a 429: the API sees at most its limits from 3 workers running units at once", async () => {
    // The kind's calls, as it makes them: the rate the coordinator holds is of calls (when a request reaches the API
    // also depends on the HTTP client's connections and the event loop, which is why the example leaves headroom).
    const calls: number[] = [];
    const recorded = defineTaskKind({
      ...lookupKind,
      process: (input, context) => {
        calls.push(performance.now());
        return lookupKind.process(input, context);
      },
    });
    const accounts = ["acme", "globex", "initech", "umbrella", "hooli", "stark"];
    const items = Array.from({ length: 150 }, (_, item) => ({ inline: `${accounts[item % 6] ?? ""}/${item}` }));
    const { job } = await runJobToEnd({ kind: recorded, params: { baseUrl }, items });
    expect(job?.status).toBe("completed");
    expect(job?.aggregate).toBe(150);
    expect(api.seen.refused).toEqual([]);
    expect(api.arrivals).toHaveLength(150);
    expect(api.seen.peak).toBeLessThanOrEqual(10);
    expect(api.seen.peakPerAccount).toBeLessThanOrEqual(2);
    expect(peakIn(calls, 1000)).toBeLessThanOrEqual(45);
  });
});
