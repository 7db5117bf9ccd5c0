import { describe, expect, it } from "vitest";
import { BlobLeaseStore } from "../../src/azure/BlobLeaseStore";
import { LeaderElector } from "../../src/library/leadership/LeaderElector";
import { createStorageClients } from "../../src/azure/clients";
import { delay } from "../../src/library/util/delay";
import { useAzurite } from "../support/azuriteFixture";
import { Recorder } from "../support/recorder";

describe("storage outage mid-term (Azurite stopped, then restarted with its data)", () => {
  const env = useAzurite({ persistent: true });

  it("aborts the leader before the server-side lease can expire; after restart a new term has a higher epoch", async () => {
    // Production client settings (SDK retries 3 × 5 s): the renew deadline must still win.
    const store = new BlobLeaseStore(
      createStorageClients({ kind: "connectionString", connectionString: env.azurite.connectionString }).blob,
      { containerName: "outage" },
    );
    const recorder = new Recorder();
    const leader = new LeaderElector({
      store,
      instanceId: "leader-before-outage",
      logger: recorder.logger,
      onEvent: recorder.onEvent,
    });
    let abortedAtMs = 0;
    const running = leader.tryLead(async (term) => {
      term.signal.addEventListener("abort", () => (abortedAtMs = Date.now()));
      await delay(3600_000, { abortSignal: term.signal });
    });
    // At least one renewal first (sent 3 s after the acquire): wait for it rather than a fixed 3.5 s, which left about
    // 0.4 s of margin on a loaded machine.
    const renewedBy = Date.now() + 15_000;
    while (recorder.ofType("lease-renewed").length === 0 && Date.now() < renewedBy) await delay(50);
    await env.azurite.stopService();
    const result = await running;
    expect(result).toMatchObject({ outcome: "aborted", reason: "deadline", epoch: 1 });
    const lastRenewal = recorder.ofType("lease-renewed").at(-1);
    if (lastRenewal === undefined) throw new Error("expected a renewal before the outage");
    // The server's lease runs ≥ 15 s from when the last renewal was sent; the leader stopped before that.
    const serverExpiryLowerBound = lastRenewal.atMs - lastRenewal.latencyMs + 15_000;
    expect(abortedAtMs).toBeLessThan(serverExpiryLowerBound);
    expect(abortedAtMs).toBeGreaterThan(lastRenewal.atMs);

    await env.azurite.startService();
    const successor = new LeaderElector({ store, instanceId: "leader-after-outage", retryIntervalMs: 500 });
    const next = await successor.lead((term) => Promise.resolve(term.epoch), {
      abortSignal: AbortSignal.timeout(30_000),
    });
    expect(next).toEqual({ outcome: "completed", epoch: 2, value: 2 });
  }, 60_000);
});
